// The `tunebench data` contract end to end: JSON shapes of import, dedup, scan, stats and snapshot,
// the bad inputs of the Datasets issue (non-UTF-8, empty, 50 MB line, JSON array as JSONL) as clear
// one-line errors, and a training run that reads a snapshot and records its id and SHA-256 in
// run.json.
#include "data/store/store.h"

#include <QCryptographicHash>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

using nlohmann::json;

namespace {

struct Run {
    int exitCode = -1;
    QByteArray out, err;
};

Run tunebench(const QStringList& args, int timeoutMs = 300000)
{
    QProcess p;
    p.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), args);
    Run r;
    if (!p.waitForFinished(timeoutMs))
        return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

json jsonOf(const Run& r)
{
    return json::parse(r.out.toStdString());
}

QString q(const std::string& s)
{
    return QString::fromStdString(s);
}

void writeText(const std::string& path, const std::string& text)
{
    std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

class TestDataCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void importDedupScanStatsSnapshotTrain()
    {
        QTemporaryDir dir;
        const std::string base = dir.path().toStdString();
        const QString store = q(base + "/project.tbstore");
        // 6 rows: line 3 lacks output, line 5 has a number for input; one exact duplicate (line 4
        // of line 1, different case and spacing); an email in line 6.
        writeText(base + "/data.jsonl",
                  "{\"instruction\": \"Name a colour.\", \"output\": \"Blue is a colour.\"}\n"
                  "{\"instruction\": \"Name an animal.\", \"output\": \"A cat is an animal.\"}\n"
                  "{\"instruction\": \"Broken row\"}\n"
                  "{\"instruction\": \"name a  colour.\", \"output\": \"BLUE is a colour.\"}\n"
                  "{\"instruction\": \"Count.\", \"input\": 3, \"output\": \"three\"}\n"
                  "{\"instruction\": \"Who wrote?\", \"output\": \"Mail ann.lee@example.org for "
                  "details.\"}\n");
        Run r =
            tunebench({QStringLiteral("data"), QStringLiteral("import"), QStringLiteral("--store"),
                       store, q(base + "/data.jsonl"), QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        json j = jsonOf(r);
        QCOMPARE(j["format"], json("alpaca"));
        QCOMPARE(j["imported"], json(4));
        QCOMPARE(j["rejected"].size(), size_t(2));
        QCOMPARE(j["rejected"][0]["line"], json(3));
        QVERIFY(j["rejected"][0]["reason"].get<std::string>().find("output") != std::string::npos);
        QCOMPARE(j["rejected"][1]["line"], json(5));

        r = tunebench({QStringLiteral("data"), QStringLiteral("dedup"), QStringLiteral("--store"),
                       store, QStringLiteral("--near"), QStringLiteral("0.8"),
                       QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        j = jsonOf(r);
        QCOMPARE(j["records"], json(4));
        QCOMPARE(j["exact_duplicates"], json(1));
        QCOMPARE(j["near_duplicates"], json(0));
        QCOMPARE(j["clusters"], json(1));
        QCOMPARE(j["removed"], json(0));
        r = tunebench({QStringLiteral("data"), QStringLiteral("dedup"), QStringLiteral("--store"),
                       store, QStringLiteral("--apply"), QStringLiteral("--json")});
        QCOMPARE(jsonOf(r)["removed"], json(1));

        r = tunebench({QStringLiteral("data"), QStringLiteral("scan"), QStringLiteral("--store"),
                       store, QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        j = jsonOf(r);
        QCOMPARE(j["flagged"], json(1));
        QCOMPARE(j["by_kind"]["email"], json(1));
        QVERIFY(j["matches"][0]["masked"].get<std::string>().find("ann.lee@") == std::string::npos);

        r = tunebench({QStringLiteral("data"), QStringLiteral("stats"), QStringLiteral("--store"),
                       store, QStringLiteral("--model"),
                       QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k"),
                       QStringLiteral("--max-length"), QStringLiteral("20"),
                       QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        j = jsonOf(r);
        QCOMPARE(j["records"], json(3));
        for (const char* key : {"min", "median", "p95", "max"})
            QVERIFY(j["tokens"][key].is_number_integer());
        QVERIFY(j["tokens"]["min"] <= j["tokens"]["median"] &&
                j["tokens"]["median"] <= j["tokens"]["max"]);
        QVERIFY(j["truncated"].is_number_integer());

        // Review: accept two of the three, then freeze them.
        for (int id : {1, 2})
            QCOMPARE(tunebench({QStringLiteral("data"), QStringLiteral("review"),
                                QStringLiteral("--store"), store, QStringLiteral("--id"),
                                QString::number(id), QStringLiteral("--annotator"),
                                QStringLiteral("ana"), QStringLiteral("--decision"),
                                QStringLiteral("accept")})
                         .exitCode,
                     0);
        r = tunebench({QStringLiteral("data"), QStringLiteral("snapshot"),
                       QStringLiteral("--store"), store, QStringLiteral("--out"),
                       q(base + "/export"), QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        j = jsonOf(r);
        QCOMPARE(j["id"], json("train-v1"));
        QCOMPARE(j["records"], json(2));
        QFile exported(q(base + "/export/train-v1.jsonl"));
        QVERIFY(exported.open(QIODevice::ReadOnly));
        QCOMPARE(QCryptographicHash::hash(exported.readAll(), QCryptographicHash::Sha256)
                     .toHex()
                     .toStdString(),
                 j["sha256"].get<std::string>());
        const std::string sha = j["sha256"].get<std::string>();

        // A run that trains on the snapshot records it.
        writeText(base + "/run.json", json{{"name", "snap"},
                                           {"model", TB_SOURCE_DIR "/datasets/models/stories260k"},
                                           {"output_dir", base + "/runs"},
                                           {"method", "lora"},
                                           {"data",
                                            {{"store", "project.tbstore"},
                                             {"snapshot", "train-v1"},
                                             {"val_ratio", 0.0},
                                             {"chat_template", "alpaca"},
                                             {"max_length", 48}}},
                                           {"batch_size", 2},
                                           {"max_steps", 2}}
                                          .dump());
        r = tunebench({QStringLiteral("train"), QStringLiteral("--config"), q(base + "/run.json"),
                       QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        std::ifstream runInfo(base + "/runs/snap/run.json");
        const json info = json::parse(runInfo);
        QCOMPARE(info["data"]["snapshots"]["train"]["id"], json("train-v1"));
        QCOMPARE(info["data"]["snapshots"]["train"]["sha256"], json(sha));
        QCOMPARE(info["data"]["snapshots"]["train"]["records"], json(2));
        QCOMPARE(info["config"]["data"]["snapshot"], json("train-v1"));

        // An unknown snapshot is named with the known ones.
        writeText(base + "/bad.json", json{{"model", TB_SOURCE_DIR "/datasets/models/stories260k"},
                                           {"output_dir", base + "/runs"},
                                           {"data",
                                            {{"store", "project.tbstore"},
                                             {"snapshot", "train-v7"},
                                             {"chat_template", "alpaca"}}}}
                                          .dump());
        r = tunebench({QStringLiteral("train"), QStringLiteral("--config"), q(base + "/bad.json")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("no snapshot \"train-v7\"") && r.err.contains("train-v1"),
                 r.err.constData());
    }

    // `data render --packed` shows the bins a packed run trains on: every record once, whole, with
    // its source line; the same packing record as the run's run.json and its console summary.
    void renderPackedShowsTheTrainersBins()
    {
        QTemporaryDir dir;
        const std::string base = dir.path().toStdString();
        const QString store = q(base + "/p.tbstore");
        std::string rows;
        const char* answers[] = {"Yes.",  "A red ball.",   "The cat sat on the mat all day long.",
                                 "No.",   "Two dogs ran.", "Lily saw a big bird in the tree.",
                                 "Blue.", "Tom had a toy."};
        for (int i = 0; i < 8; ++i)
            rows += "{\"instruction\": \"Say thing " + std::to_string(i) + ".\", \"output\": \"" +
                    answers[i] + "\"}\n";
        writeText(base + "/data.jsonl", rows);
        QCOMPARE(tunebench({QStringLiteral("data"), QStringLiteral("import"),
                            QStringLiteral("--store"), store, q(base + "/data.jsonl")})
                     .exitCode,
                 0);
        QCOMPARE(tunebench({QStringLiteral("data"), QStringLiteral("snapshot"),
                            QStringLiteral("--store"), store, QStringLiteral("--include-pending")})
                     .exitCode,
                 0);
        const QStringList render{QStringLiteral("data"),
                                 QStringLiteral("render"),
                                 QStringLiteral("--packed"),
                                 QStringLiteral("--store"),
                                 store,
                                 QStringLiteral("--snapshot"),
                                 QStringLiteral("train-v1"),
                                 QStringLiteral("--max-length"),
                                 QStringLiteral("96"),
                                 QStringLiteral("--chat-template"),
                                 QStringLiteral("alpaca"),
                                 QStringLiteral("--seed"),
                                 QStringLiteral("3")};
        Run r = tunebench(render + QStringList{QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const json j = jsonOf(r);
        QCOMPARE(j["records"], json(8));
        std::set<int64_t> records;
        int64_t tokens = 0;
        for (const json& bin : j["bins"]) {
            int64_t inBin = 0;
            for (const json& e : bin["examples"]) {
                QVERIFY(records.insert(e["record_id"].get<int64_t>()).second);
                const std::string source = e["source"].get<std::string>();
                QVERIFY2(source.find("data.jsonl:") != std::string::npos, source.c_str());
                inBin += e["tokens"].get<int64_t>();
            }
            QCOMPARE(bin["tokens"].get<int64_t>(), inBin);
            QVERIFY(inBin <= 96);
            tokens += inBin;
        }
        QCOMPARE(records.size(), size_t(8));
        const json& packing = j["packing"];
        QCOMPARE(packing["examples"], json(8));
        QCOMPARE(packing["tokens"].get<int64_t>(), tokens);
        QCOMPARE(packing["bins"].get<size_t>(), j["bins"].size());
        QCOMPARE(packing["slots"].get<int64_t>(), 96 * packing["bins"].get<int64_t>());
        QCOMPARE(packing["efficiency"].get<double>(),
                 double(tokens) / packing["slots"].get<double>());
        QVERIFY(packing["bins"].get<int64_t>() < 8);  // several examples share a bin
        r = tunebench(render);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.out.startsWith("bin 1 (") && r.out.contains("efficiency"), r.out.constData());

        // One record: the response and its end-of-turn EOS (</s>, which decoding drops) carry loss
        // and are marked; the instruction is not.
        r = tunebench({QStringLiteral("data"), QStringLiteral("render"), QStringLiteral("--store"),
                       store, QStringLiteral("--id"), QStringLiteral("2"),
                       QStringLiteral("--chat-template"), QStringLiteral("alpaca")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.out.contains("### Response:\n[[ A red ball.</s>]]"), r.out.constData());
        QVERIFY2(!r.out.contains("[[### Instruction"), r.out.constData());

        // A packed run of the same snapshot, max_length and seed packs the same bins.
        writeText(base + "/run.json", json{{"name", "packed"},
                                           {"model", TB_SOURCE_DIR "/datasets/models/stories260k"},
                                           {"output_dir", base + "/runs"},
                                           {"data",
                                            {{"store", "p.tbstore"},
                                             {"snapshot", "train-v1"},
                                             {"val_ratio", 0.0},
                                             {"chat_template", "alpaca"},
                                             {"packing", true},
                                             {"max_length", 96}}},
                                           {"seed", 3},
                                           {"batch_size", 2},
                                           {"max_steps", 1}}
                                          .dump());
        r = tunebench({QStringLiteral("train"), QStringLiteral("--config"), q(base + "/run.json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.out.contains(QByteArray("packed 8 examples into ") +
                                QByteArray::number(packing["bins"].get<int>()) + " bins"),
                 r.out.constData());
        std::ifstream runInfo(base + "/runs/packed/run.json");
        QCOMPARE(json::parse(runInfo)["data"]["packing"], packing);
    }

    void badInputsGetClearMessages_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("expected");
        QTest::newRow("empty") << QByteArray() << QStringLiteral("empty.jsonl")
                               << QStringLiteral("empty");
        QTest::newRow("json array in jsonl")
            << QByteArray("[{\"text\": \"a\"}, {\"text\": \"b\"}]\n")
            << QStringLiteral("array.jsonl") << QStringLiteral("JSON array, not JSONL");
        QTest::newRow("not utf-8")
            << QByteArray("{\"text\": \"caf\xe9\"}\n") << QStringLiteral("latin1.jsonl")
            << QStringLiteral(":1: not valid UTF-8");
        QTest::newRow("50 MB line")
            << QByteArray() << QStringLiteral("huge.jsonl")
            << QStringLiteral(":1: line is 50.0 MB, over the 16 MiB row limit");
    }

    void badInputsGetClearMessages()
    {
        QFETCH(QByteArray, content);
        QFETCH(QString, name);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const QString file = dir.filePath(name);
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            if (name == QStringLiteral("huge.jsonl")) {
                const QByteArray block(1000000, 'x');  // 50 x 1 MB: a 50 MB line
                f.write("{\"text\": \"");
                for (int i = 0; i < 50; ++i)
                    f.write(block);
                f.write("\"}\n");
            } else {
                f.write(content);
            }
        }
        const QString store = dir.filePath(QStringLiteral("s.tbstore"));
        Run r = tunebench({QStringLiteral("data"), QStringLiteral("import"),
                           QStringLiteral("--store"), store, file});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(file.toUtf8()) && r.err.contains(expected.toUtf8()),
                 r.err.constData());
        QCOMPARE(r.err.count('\n'), qsizetype(1));  // one line
        // The store stays usable and empty.
        r = tunebench({QStringLiteral("data"), QStringLiteral("list"), QStringLiteral("--store"),
                       store, QStringLiteral("--json")});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(jsonOf(r)["total"], json(0));
    }

    void storeErrors()
    {
        QTemporaryDir dir;
        Run r =
            tunebench({QStringLiteral("data"), QStringLiteral("dedup"), QStringLiteral("--store"),
                       dir.filePath(QStringLiteral("missing.tbstore"))});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("missing.tbstore: no such dataset store"), r.err.constData());
        const QString notStore = dir.filePath(QStringLiteral("notes.txt"));
        writeText(notStore.toStdString(), std::string(200, 'z'));
        r = tunebench(
            {QStringLiteral("data"), QStringLiteral("list"), QStringLiteral("--store"), notStore});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("not a Tunebench dataset store"), r.err.constData());
        r = tunebench({QStringLiteral("data"), QStringLiteral("frobnicate"),
                       QStringLiteral("--store"), notStore});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("unknown subcommand 'frobnicate'"), r.err.constData());

        // Options outside their range are refused by name (they listed nothing, with status 0).
        const QString store = dir.filePath(QStringLiteral("s.tbstore"));
        tb::DataStore::open(store.toStdString(), true);
        const std::vector<std::pair<QStringList, const char*>> bad{
            {{QStringLiteral("list"), QStringLiteral("--limit"), QStringLiteral("-1")},
             "option --limit is -1"},
            {{QStringLiteral("list"), QStringLiteral("--offset"), QStringLiteral("-5")},
             "option --offset is -5"},
            {{QStringLiteral("list"), QStringLiteral("--limit"), QStringLiteral("1"),
              QStringLiteral("--limit"), QStringLiteral("2")},
             "option --limit is given twice (1, then 2): give it once"},
            {{QStringLiteral("list"), QStringLiteral("--split"), QStringLiteral("bogus")},
             "option --split 'bogus' (allowed: train, validation, general)"},
            {{QStringLiteral("history"), QStringLiteral("--id"), QStringLiteral("-5")},
             "option --id is -5"},
            {{QStringLiteral("history"), QStringLiteral("--id"), QStringLiteral("99999")}, "99999"},
            // A snapshot's manifest names what it is for: only what a run could use.
            {{QStringLiteral("snapshot"), QStringLiteral("--chat-template"),
              QStringLiteral("bogus")},
             "option --chat-template 'bogus' (allowed: model, chatml"},
            {{QStringLiteral("snapshot"), QStringLiteral("--chat-template"),
              QStringLiteral("Mistral")},
             "option --chat-template 'Mistral' (allowed: model, chatml"},
            {{QStringLiteral("chunk"), QStringLiteral("--max-tokens"), QStringLiteral("16"),
              QStringLiteral("--overlap"), QStringLiteral("8")},
             "option --overlap is 8 (0 to 7: less than half of --max-tokens 16)"},
            {{QStringLiteral("chunk"), QStringLiteral("--max-tokens"),
              QStringLiteral("4294967304")},
             "option --max-tokens is 4294967304 (8 to 1048576)"},
            {{QStringLiteral("snapshot"), QStringLiteral("--loss"), QStringLiteral("bogus")},
             "option --loss 'bogus' (allowed: full, chunked)"},
            {{QStringLiteral("snapshot"), QStringLiteral("--max-length"), QStringLiteral("-1")},
             "option --max-length is -1"}};
        for (const auto& [argv, fragment] : bad) {
            QStringList full{QStringLiteral("data")};
            full << argv << QStringLiteral("--store") << store;
            r = tunebench(full);
            QCOMPARE(r.exitCode, 1);
            QVERIFY2(r.err.contains(fragment), r.err.constData());
        }
        // A small chunk without --overlap: the default overlap shrinks with it (32 was refused for
        // any --max-tokens up to 64).
        QCOMPARE(tunebench({QStringLiteral("data"), QStringLiteral("import"),
                            QStringLiteral(TB_SOURCE_DIR "/datasets/tiny/text.jsonl"),
                            QStringLiteral("--store"), store})
                     .exitCode,
                 0);
        r = tunebench({QStringLiteral("data"), QStringLiteral("chunk"), QStringLiteral("--store"),
                       store, QStringLiteral("--max-tokens"), QStringLiteral("16"),
                       QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(jsonOf(r)["chunks"].get<int64_t>() > jsonOf(r)["records"].get<int64_t>());
        // A word that is not UTF-8 (a name typed in a Latin-1 terminal) is refused by its option
        // before it reaches the store, where it made every later --json of the store fail.
        // Both spellings: --annotator VALUE and --annotator=VALUE.
        for (const QString& annotator : {QStringLiteral("--annotator \"$(printf 'a\\377')\""),
                                         QStringLiteral("--annotator=\"$(printf 'a\\377')\"")}) {
            QProcess sh;
            sh.start(QStringLiteral("/bin/sh"),
                     {QStringLiteral("-c"),
                      QStringLiteral("exec \"$0\" data review --store \"$1\" --id 1 --decision "
                                     "accept ") +
                          annotator,
                      QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), store});
            QVERIFY(sh.waitForFinished(60000));
            QCOMPARE(sh.exitCode(), 1);
            const QByteArray err = sh.readAllStandardError();
            QVERIFY2(err.contains("option --annotator is not valid UTF-8 (byte 0xFF at 1)"),
                     err.constData());
        }
    }
};

QTEST_MAIN(TestDataCli)
#include "test_data_cli.moc"
