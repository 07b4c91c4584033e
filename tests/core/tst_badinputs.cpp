// The bad-input catalogue (tests/data/bad-inputs, index expected.json): every broken file is
// loaded through the real API and must fail with exactly the expected diagnostics (file, JSON
// pointer or line, message), must not be modified by the attempt, and - for inputs that are
// imported into a project - must leave the user's project byte- and record-identical. A few are
// also run through the memx binary (exit status 1, the same message on stderr).
#include "memx/io/formats.h"
#include "memx/profiling/megatronlog.h"
#include "memx/profiling/profileio.h"
#include "memx/profiling/sailorimporter.h"
#include "memx/store/sqlitestore.h"
#include "memx/util/diagnostic.h"
#include "memx/util/fileio.h"
#include "memx/util/jsonreader.h"

#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <filesystem>
#include <set>

using namespace memx;
using nlohmann::json;

static const std::string kDir = MEMX_SOURCE_DIR "/tests/data/bad-inputs";
static const std::string kGoodCsv = MEMX_SOURCE_DIR "/tests/data/profiles/small.csv";

/// SHA-256 of a file, or of every file under a folder (path + content), so "untouched" is exact.
static QByteArray digest(const std::string &path)
{
    QCryptographicHash h(QCryptographicHash::Sha256);
    const QString p = QString::fromStdString(path);
    if (QFileInfo(p).isDir()) {
        QStringList files;
        QDirIterator it(p, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
        while (it.hasNext())
            files << it.next();
        files.sort();
        for (const QString &f : files) {
            h.addData(f.toUtf8());
            QFile file(f);
            if (file.open(QIODevice::ReadOnly))
                h.addData(file.readAll());
        }
    } else {
        QFile file(p);
        if (file.open(QIODevice::ReadOnly))
            h.addData(file.readAll());
        else
            h.addData("<missing>");
    }
    return h.result().toHex();
}

/// Everything a project holds, as one JSON text (record-level comparison).
static std::string projectContent(const std::string &path)
{
    SqliteStore s(path, false);
    json j;
    j["models"] = json::array();
    for (const auto &id : s.modelIds())
        j["models"].push_back(toJson(*s.model(id)));
    j["clusters"] = json::array();
    for (const auto &n : s.clusterNames())
        j["clusters"].push_back(toJson(*s.cluster(n)));
    j["profiles"] = json::array();
    const ProfileSet profiles = s.profiles(); // the set must outlive the loop over its profiles
    for (const LayerProfile &p : profiles.profiles())
        j["profiles"].push_back(toJson(p));
    j["runs"] = json::array();
    for (const MeasuredRun &r : s.runs())
        j["runs"].push_back(toJson(r));
    j["network"] = json::array();
    for (const NetworkMeasurement &m : s.networkMeasurements())
        j["network"].push_back(toJson(m));
    return j.dump();
}

/// Loads one catalogue case through the real API; returns the diagnostics it failed with
/// (empty when it loaded, which is a test failure).
static std::vector<Diagnostic> attempt(const json &c, const std::string &path)
{
    const std::string kind = c.at("kind");
    try {
        if (kind == "cluster") {
            loadCluster(path);
        } else if (kind == "model") {
            loadModel(path);
        } else if (kind == "catalogue") {
            parseCatalogue(readTextFile(path), path);
        } else if (kind == "plan") {
            const Plan p = loadPlan(path);
            Diagnostics d(path);
            validatePlan(p, loadCluster(kDir + "/" + c.at("cluster").get<std::string>()), resolveModel(c.at("model")),
                         d);
            d.throwIfAny();
        } else if (kind == "profile-csv" || kind == "profile-json") {
            loadProfileFile(path);
        } else if (kind == "megatron") {
            importMegatronLog(path, loadPlan(kDir + "/" + c.at("plan").get<std::string>()),
                              loadCluster(kDir + "/" + c.at("cluster").get<std::string>()),
                              resolveModel(c.at("model")));
        } else if (kind == "sailor") {
            importSailor(path);
        } else if (kind == "project") {
            SqliteStore s(path, false);
            projectContent(path);
        } else {
            qFatal("unknown kind %s", kind.c_str());
        }
    } catch (const LoadError &e) {
        return e.diagnostics();
    }
    return {};
}

static bool isImport(const std::string &kind)
{
    return kind == "profile-csv" || kind == "profile-json" || kind == "megatron" || kind == "sailor";
}

class TestBadInputs : public QObject {
    Q_OBJECT

    json mIndex;
    QTemporaryDir mTmp;
    std::string mGoodProject; ///< a project holding the small.csv profiles
    QByteArray mGoodDigest;
    std::string mGoodContent;

    /// A fresh copy of the good project (the user's data a bad import must not change).
    std::string copyGoodProject(const QString &name)
    {
        const std::string copy = mTmp.filePath(name).toStdString();
        std::filesystem::copy_file(mGoodProject, copy, std::filesystem::copy_options::overwrite_existing);
        return copy;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(mTmp.isValid());
        mIndex = readJsonFile(kDir + "/expected.json");
        mGoodProject = mTmp.filePath(QStringLiteral("good.memx")).toStdString();
        {
            SqliteStore s(mGoodProject, true);
            ImportBatch b;
            b.profiles = parseProfileCsv(readTextFile(kGoodCsv), kGoodCsv);
            b.models.push_back(resolveModel("llama2-7b"));
            writeImport(s, b);
        }
        mGoodDigest = digest(mGoodProject);
        mGoodContent = projectContent(mGoodProject);
        QVERIFY(mGoodContent.find("toy-2l") != std::string::npos);
    }

    void catalogueIsComplete()
    {
        // >= 40 cases, every file in the folder is indexed (and every indexed file exists).
        const auto &cases = mIndex.at("cases");
        QVERIFY2(cases.size() >= 40, std::to_string(cases.size()).c_str());
        std::set<std::string> indexed, kinds;
        for (const auto &c : cases) {
            indexed.insert(c.at("file").get<std::string>());
            kinds.insert(c.at("kind").get<std::string>());
            QVERIFY2(std::filesystem::exists(kDir + "/" + c.at("file").get<std::string>()),
                     c.at("file").get<std::string>().c_str());
        }
        std::set<std::string> helpers;
        for (const char *k : {"cluster", "plan", "model"})
            for (const auto &c : cases)
                if (c.contains(k) && c.at(k).get<std::string>().find('.') != std::string::npos)
                    helpers.insert(c.at(k).get<std::string>());
        for (const auto &e : std::filesystem::directory_iterator(kDir)) {
            const std::string name = e.path().filename().string();
            if (name == "expected.json" || name == "README.md" || name.rfind("good.", 0) == 0 || helpers.count(name))
                continue;
            QVERIFY2(indexed.count(name), ("not in expected.json: " + name).c_str());
        }
        for (const char *k :
             {"cluster", "model", "plan", "catalogue", "profile-csv", "profile-json", "megatron", "sailor", "project"})
            QVERIFY2(kinds.count(k), k);
    }

    void failsWithExpectedMessage_data()
    {
        QTest::addColumn<int>("index");
        const auto &cases = mIndex.at("cases");
        for (size_t i = 0; i < cases.size(); ++i)
            QTest::newRow(cases[i].at("file").get<std::string>().c_str()) << static_cast<int>(i);
    }

    void failsWithExpectedMessage()
    {
        QFETCH(int, index);
        const json &c = mIndex.at("cases").at(static_cast<size_t>(index));
        const std::string path = kDir + "/" + c.at("file").get<std::string>();
        const QByteArray before = digest(path);

        const std::vector<Diagnostic> got = attempt(c, path);
        std::string all;
        for (const Diagnostic &d : got)
            all += "\n  " + d.toString();
        QVERIFY2(!got.empty(), "loaded without an error");

        // Every expected diagnostic is there: same file (as given, or a file inside the given
        // folder), same pointer, message containing the expected text.
        for (const json &e : c.at("errors")) {
            const std::string file = path + (e.contains("file") ? "/" + e.at("file").get<std::string>() : "");
            const std::string pointer = e.at("pointer");
            const std::string message = e.at("message");
            const bool found = std::any_of(got.begin(), got.end(), [&](const Diagnostic &d) {
                return d.file == file && d.pointer == pointer && d.message.find(message) != std::string::npos;
            });
            QVERIFY2(found, ("expected " + file + ": " + pointer + ": ..." + message + "...\ngot:" + all).c_str());
        }
        // And nothing unexpected (each reported problem is listed).
        QVERIFY2(got.size() == c.at("errors").size(), ("unexpected extra problems:" + all).c_str());

        QCOMPARE(digest(path), before); // the bad file itself is never rewritten
    }

    /// Every import-kind bad input, run through the real import path into a copy of a good
    /// project: the import fails and the project is byte- and record-identical afterwards.
    void badImportLeavesProjectUntouched_data()
    {
        QTest::addColumn<int>("index");
        const auto &cases = mIndex.at("cases");
        for (size_t i = 0; i < cases.size(); ++i)
            if (isImport(cases[i].at("kind")))
                QTest::newRow(cases[i].at("file").get<std::string>().c_str()) << static_cast<int>(i);
    }

    void badImportLeavesProjectUntouched()
    {
        QFETCH(int, index);
        const json &c = mIndex.at("cases").at(static_cast<size_t>(index));
        const std::string kind = c.at("kind");
        const std::string path = kDir + "/" + c.at("file").get<std::string>();
        const std::string project = copyGoodProject(QStringLiteral("import-%1.memx").arg(index));

        QStringList args {QStringLiteral("profile"), QStringLiteral("import"), QStringLiteral("--project"),
                          QString::fromStdString(project), QStringLiteral("--format")};
        if (kind == "megatron")
            args << QStringLiteral("megatron") << QStringLiteral("--plan")
                 << QString::fromStdString(kDir + "/" + c.at("plan").get<std::string>()) << QStringLiteral("--cluster")
                 << QString::fromStdString(kDir + "/" + c.at("cluster").get<std::string>()) << QStringLiteral("--model")
                 << QString::fromStdString(c.at("model").get<std::string>());
        else
            args << QString::fromStdString(kind == "profile-csv" ? "csv" : kind == "profile-json" ? "json" : kind);
        // A good file first and the bad one second: the good one must not be written either.
        if (kind == "profile-csv")
            args << QString::fromStdString(kGoodCsv);
        args << QString::fromStdString(path);

        QVERIFY2(QFileInfo::exists(QStringLiteral(MEMX_CLI_PATH)), "build the memx target first");
        QProcess p;
        p.start(QStringLiteral(MEMX_CLI_PATH), args);
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(p.exitCode() == 1, qPrintable(QStringLiteral("exit %1: %2").arg(p.exitCode()).arg(err)));
        // The first expected problem, printed as "error: file: pointer: message".
        const json &e = c.at("errors").at(0);
        const std::string file = path + (e.contains("file") ? "/" + e.at("file").get<std::string>() : "");
        const std::string line = file + ": " + e.at("pointer").get<std::string>() + (e.at("pointer") == "" ? "" : ": ");
        QVERIFY2(err.contains(QString::fromStdString(line)) && err.contains(QString::fromStdString(e.at("message"))),
                 qPrintable(err));

        QCOMPARE(digest(project), mGoodDigest);
        QCOMPARE(projectContent(project), mGoodContent);
    }

    /// Bad JSON files through `memx validate`: exit 1 and the same file: pointer: message.
    void validateCliReportsTheSameMessage()
    {
        int checked = 0;
        for (const json &c : mIndex.at("cases")) {
            const std::string kind = c.at("kind");
            if (kind != "cluster" && kind != "model")
                continue;
            const std::string path = kDir + "/" + c.at("file").get<std::string>();
            QProcess p;
            p.start(QStringLiteral(MEMX_CLI_PATH), {QStringLiteral("validate"), QString::fromStdString(path)});
            QVERIFY(p.waitForFinished(60000));
            const QString out = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
            QVERIFY2(p.exitCode() == 1, qPrintable(QString::fromStdString(path) + QLatin1Char('\n') + out));
            // `memx validate` dispatches on the "format" field first, so a file without a usable
            // one gets that message ("validateMessage") instead of the loader's.
            const std::string message
                = c.value("validateMessage", c.at("errors").at(0).at("message").get<std::string>());
            QVERIFY2(out.contains(QString::fromStdString(message)), qPrintable(out));
            QVERIFY2(out.contains(QString::fromStdString(c.at("file"))), qPrintable(out));
            ++checked;
        }
        QVERIFY(checked >= 20);
    }

    /// An interrupted import (progress callback cancels half-way, as Ctrl+C or the GUI's Cancel
    /// does) rolls back: the project is byte- and record-identical.
    void interruptedImportLeavesProjectUntouched()
    {
        const std::string project = copyGoodProject(QStringLiteral("interrupted.memx"));
        ImportBatch b;
        b.profiles = parseProfileCsv(readTextFile(kGoodCsv), kGoodCsv);
        for (LayerProfile &p : b.profiles)
            p.key.model = "other-model"; // new records, not a rewrite of existing ones
        b.models.push_back(resolveModel("gpt3-1.3b"));
        QVERIFY(b.itemCount() >= 3);
        {
            SqliteStore s(project, false);
            size_t calls = 0;
            QVERIFY_THROWS_EXCEPTION(Cancelled, writeImport(s, b, [&](size_t d, size_t total) {
                                         ++calls;
                                         return d < total / 2 + 1; // cancel after half of the items were written
                                     }));
            QVERIFY(calls >= 2);
        }
        QCOMPARE(digest(project), mGoodDigest);
        QCOMPARE(projectContent(project), mGoodContent);
    }
};

QTEST_GUILESS_MAIN(TestBadInputs)
#include "tst_badinputs.moc"
