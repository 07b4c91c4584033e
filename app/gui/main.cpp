#include "mainwindow.h"

#include "memx/ui/clustercanvas.h"
#include "memx/ui/clusterdocument.h"

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
    parser.addPositionalArgument(QStringLiteral("cluster"),
                                 QStringLiteral("Cluster file to open (default: a shipped sample)"));
    QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                  QStringLiteral("Save a PNG of the window after start-up and quit."),
                                  QStringLiteral("file"));
    QCommandLineOption select(QStringLiteral("select-node"),
                              QStringLiteral("Select the node group with this name after start-up (screenshots)."),
                              QStringLiteral("name"));
    parser.addOption(screenshot);
    parser.addOption(select);
    parser.process(app);

    // Screenshots must not depend on (or change) the user's saved layout.
    MainWindow window(!parser.isSet(screenshot));
    const QStringList files = parser.positionalArguments();
    window.openClusterFile(files.isEmpty() ? MainWindow::defaultSampleCluster() : files.front());
    window.show();
    if (parser.isSet(select)) {
        auto *canvas = window.findChild<memx::ui::ClusterCanvas *>();
        const int index = window.document()->groupIndexOf(parser.value(select).toStdString());
        if (canvas && index >= 0)
            canvas->selectGroup(index);
    }
    if (parser.isSet(screenshot))
        window.saveScreenshotAndQuit(parser.value(screenshot));
    return app.exec();
}
