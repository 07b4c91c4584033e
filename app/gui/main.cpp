#include "mainwindow.h"

#include <QApplication>
#include <QCommandLineParser>

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("MemX Workbench"));
    QApplication::setOrganizationName(QStringLiteral("MemX"));
    QApplication::setApplicationVersion(QStringLiteral(MEMX_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Memory-aware parallel planning for heterogeneous GPU clusters"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("cluster"), QStringLiteral("Cluster file to open (default: a shipped sample)"));
    QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                  QStringLiteral("Save a PNG of the window after start-up and quit."),
                                  QStringLiteral("file"));
    parser.addOption(screenshot);
    parser.process(app);

    MainWindow window;
    const QStringList files = parser.positionalArguments();
    window.openClusterFile(files.isEmpty() ? MainWindow::defaultSampleCluster() : files.front());
    window.show();
    if (parser.isSet(screenshot))
        window.saveScreenshotAndQuit(parser.value(screenshot));
    return app.exec();
}
