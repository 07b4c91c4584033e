// Settings facade: typed values round-trip through a real QSettings (INI file); recent files are
// de-duplicated, most recent first, capped.
#include "memx/ui/settings.h"

#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

using memx::ui::Settings;

class TestSettings : public QObject {
    Q_OBJECT

private slots:
    void roundTrip()
    {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("memx.ini"));
        {
            QSettings qs(ini, QSettings::IniFormat);
            Settings s(&qs);
            QCOMPARE(s.lastModelId(), QStringLiteral("llama2-7b")); // default
            QCOMPARE(s.lastWeights(), memx::ObjectiveWeights {}); // first run: the documented default 1, 0.5, 0.5
            QCOMPARE(s.lastWeights(), (memx::ObjectiveWeights {1, 0.5, 0.5}));
            s.setLastWeights({0.75, 0.25, 2.0}); // balance clamped to 1
            s.setLastModelId(QStringLiteral("gpt3-13b"));
            s.setWindowGeometry(QByteArray("geom\0etry", 9));
            QVERIFY(s.lastExportFormat().isEmpty());
            s.setLastExportFormat(QStringLiteral("flagscale"));
            s.setLastExportDir(QStringLiteral("/tmp/out"));
        }
        QSettings qs(ini, QSettings::IniFormat);
        Settings s(&qs);
        QCOMPARE(s.lastWeights(), (memx::ObjectiveWeights {0.75, 0.25, 1.0}));
        QCOMPARE(s.lastModelId(), QStringLiteral("gpt3-13b"));
        QCOMPARE(s.windowGeometry(), QByteArray("geom\0etry", 9));
        QCOMPARE(s.lastExportFormat(), QStringLiteral("flagscale"));
        QCOMPARE(s.lastExportDir(), QStringLiteral("/tmp/out"));
    }

    void recentFiles()
    {
        QTemporaryDir dir;
        QSettings qs(dir.filePath(QStringLiteral("r.ini")), QSettings::IniFormat);
        Settings s(&qs);
        for (int i = 0; i < 10; ++i)
            s.addRecentFile(dir.filePath(QStringLiteral("c%1.json").arg(i)));
        QStringList r = s.recentFiles();
        QCOMPARE(r.size(), Settings::kMaxRecentFiles);
        QCOMPARE(r.front(), dir.filePath(QStringLiteral("c9.json")));
        s.addRecentFile(dir.filePath(QStringLiteral("c5.json"))); // moves to the front, no duplicate
        r = s.recentFiles();
        QCOMPARE(r.front(), dir.filePath(QStringLiteral("c5.json")));
        QCOMPARE(r.count(dir.filePath(QStringLiteral("c5.json"))), 1);
        s.removeRecentFile(dir.filePath(QStringLiteral("c5.json")));
        QVERIFY(!s.recentFiles().contains(dir.filePath(QStringLiteral("c5.json"))));
        s.clearRecentFiles();
        QVERIFY(s.recentFiles().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestSettings)
#include "tst_settings.moc"
