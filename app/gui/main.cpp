#include "memx/io/formats.h"
#include "memx/ui/clustercanvas.h"
#include "memx/ui/clusterdocument.h"
#include "memx/ui/mainwindow.h"

#include <QApplication>
#include <QCommandLineParser>

int main(int argc, char **argv)
{
    Q_INIT_RESOURCE(memx);
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("MemX Workbench"));
    QApplication::setOrganizationName(QStringLiteral("MemX"));
    QApplication::setApplicationVersion(QStringLiteral(MEMX_VERSION));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/memx/icons/memx.svg")));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Memory-aware parallel planning for heterogeneous GPU clusters"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("file"),
                                 QStringLiteral("Cluster JSON or .memx project to open (default: a shipped sample)"));
    QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                  QStringLiteral("Save a PNG of the window once the first search's results are "
                                                 "drawn, then quit."),
                                  QStringLiteral("file"));
    QCommandLineOption select(QStringLiteral("select-node"),
                              QStringLiteral("Select the node group with this name after start-up (screenshots)."),
                              QStringLiteral("name"));
    QCommandLineOption selectPlan(QStringLiteral("select-plan"),
                                  QStringLiteral("Select the plan of this rank once the results are shown."),
                                  QStringLiteral("rank"));
    QCommandLineOption model(QStringLiteral("model"), QStringLiteral("Model preset id or model file to use."),
                             QStringLiteral("id"));
    QCommandLineOption screenshotView(
        QStringLiteral("screenshot-view"),
        QStringLiteral(
            "What --screenshot grabs: window (default), profiles (the Profiles dock after planning the "
            "profiling jobs and running them on the virtual testbed) or export (the export dialog of "
            "the selected plan) or compare (Plan > Compare with Baselines once it finished) or plans (ranks 1-3 "
            "side by side, their memory bars) or plan-timelines (the same, their 1F1B timelines)."),
        QStringLiteral("view"), QStringLiteral("window"));
    parser.addOption(screenshot);
    parser.addOption(screenshotView);
    parser.addOption(select);
    parser.addOption(selectPlan);
    parser.addOption(model);
    parser.process(app);

    memx::ui::MainWindow::setSampleClusterDirs(
        {QStringLiteral(MEMX_SOURCE_DIR "/sample_clusters"), QStringLiteral(MEMX_DATA_DIR "/sample_clusters")});
    // Screenshots must not depend on (or change) the user's saved layout.
    memx::ui::MainWindow window(!parser.isSet(screenshot));
    if (parser.isSet(model)) {
        try {
            window.document()->setModel(memx::resolveModel(parser.value(model).toStdString()));
        } catch (const std::exception &e) {
            qWarning("--model: %s", e.what());
        }
    }
    const QStringList files = parser.positionalArguments();
    window.openFile(files.isEmpty() ? memx::ui::MainWindow::defaultSampleCluster() : files.front());
    window.show();
    if (parser.isSet(select)) {
        auto *canvas = window.canvas();
        const int index = window.document()->groupIndexOf(parser.value(select).toStdString());
        if (index >= 0)
            canvas->selectGroup(index);
    }
    if (parser.isSet(screenshot)) {
        using View = memx::ui::MainWindow::ScreenshotView;
        const QString v = parser.value(screenshotView);
        View view = View::Window;
        if (v == QLatin1String("profiles"))
            view = View::Profiles;
        else if (v == QLatin1String("export"))
            view = View::ExportDialog;
        else if (v == QLatin1String("compare"))
            view = View::Compare;
        else if (v == QLatin1String("plans"))
            view = View::PlanComparison;
        else if (v == QLatin1String("plan-timelines"))
            view = View::PlanTimelines;
        else if (v != QLatin1String("window")) {
            qWarning(
                "--screenshot-view: expected window, profiles, export, compare, plans or plan-timelines, found \"%s\"",
                qPrintable(v));
            return 2;
        }
        window.saveScreenshotAndQuit(parser.value(screenshot), parser.value(selectPlan).toInt(), view);
    }
    return app.exec();
}
