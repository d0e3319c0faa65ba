// `tunebench data pairs` end to end: an import that prints each rejected row as file:line and
// reason, choices as shown with a swap, agreement figures, a ranking, a snapshot whose pairs
// export in TRL's standard layout, and clear errors for bad input.
#include <QtTest>

#include "cli/cli_run.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using nlohmann::json;

namespace {

using Run = tbtest::CliRun;

Run tunebench(const QStringList& args)
{
    return tbtest::runTunebench(args, 120000);
}

QStringList pairs(const QString& store, QStringList args)
{
    args.insert(1, store);
    return QStringList{"data", "pairs"} + args;
}

std::string row(const char* prompt, const char* chosen, const char* rejected)
{
    return json{{"prompt", prompt}, {"chosen", chosen}, {"rejected", rejected}}.dump() + "\n";
}

bool has(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

}  // namespace

class TestDataPairsCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The bundled model samples K answers into a ranking; an order of them gives K(K-1)/2 pairs.
    void rankGeneratedAnswers()
    {
        QTemporaryDir dir;
        const QString store = dir.filePath(QStringLiteral("g.tbstore"));
        QCOMPARE(tunebench({"data", "import", "--store", store,
                            QStringLiteral(TB_SOURCE_DIR "/datasets/tiny/val.jsonl")})
                     .exitCode,
                 0);
        const Run gen = tunebench(pairs(store, {"rank", "generate", "Tell me about Ben.", "--k",
                                                "3", "--max-new-tokens", "8", "--json"}));
        QVERIFY2(gen.exitCode == 0, gen.err.c_str());
        const json g = json::parse(gen.out);
        QCOMPARE(g["answers"].get<int>(), 3);
        const Run order =
            tunebench(pairs(store, {"rank", QString::number(g["ranking_id"].get<int64_t>()),
                                    "2,0,1", "--annotator", "ana", "--json"}));
        QVERIFY2(order.exitCode == 0, order.err.c_str());
        QCOMPARE(json::parse(order.out)["pair_ids"].size(), size_t(3));
        const Run bad = tunebench(pairs(store, {"rank", "generate", "Hi", "--k", "1"}));
        QCOMPARE(bad.exitCode, 1);
        QVERIFY2(has(bad.err, "at least 2"), bad.err.c_str());
    }

    void importChooseAgreeSnapshotExport()
    {
        QTemporaryDir dir;
        const std::string base = dir.path().toStdString();
        const QString store = QString::fromStdString(base + "/p.tbstore");
        const std::string file = base + "/pairs.jsonl";
        std::ofstream(file) << row("p1", "good", "bad") << "{\"prompt\": \"p\"}\n"
                            << row("p2", "yes", "no") << row("p3", "same", "same");
        Run r = tunebench(pairs(store, {"import", QString::fromStdString(file)}));
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY2(has(r.out, file + ":2: missing key \"chosen\"\n"), r.out.c_str());
        QVERIFY(has(r.out, file + ":4: chosen is identical to rejected\n"));
        QVERIFY(has(r.out, "imported 2 pairs, rejected 2 rows"));

        // Pair 2 shown swapped: "a" is the stored rejected "no", which ann and bob both pick...
        QCOMPARE(tunebench(pairs(store, {"swap", "2"})).exitCode, 0);
        r = tunebench(pairs(store, {"choose", "2", "a", "--annotator", "bob"}));
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY(has(r.out, "pair 2: rejected"));
        QCOMPARE(tunebench(pairs(store, {"choose", "1", "a", "--annotator", "ann"})).exitCode, 0);
        QCOMPARE(tunebench(pairs(store, {"choose", "1", "a", "--annotator", "bob"})).exitCode, 0);
        QCOMPARE(tunebench(pairs(store, {"choose", "2", "a", "--annotator", "ann"})).exitCode, 0);
        // ... and on pair 1 both pick a: 2 of 2 agree; both verdict lists are (chosen, rejected),
        // so pe = 0.5 * 0.5 + 0.5 * 0.5 = 0.5 and kappa = (1 - 0.5) / (1 - 0.5) = 1.
        r = tunebench(pairs(store, {"agreement", "--json"}));
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const json a = json::parse(r.out);
        QCOMPARE(a["pairs"].size(), size_t(1));
        QCOMPARE(a["pairs"][0]["items"].get<int>(), 2);
        QCOMPARE(a["pairs"][0]["percent"].get<double>(), 100.0);
        QCOMPARE(a["pairs"][0]["kappa"].get<double>(), 1.0);
        r = tunebench(pairs(store, {"list", "--json"}));
        const json listed = json::parse(r.out);
        QCOMPARE(listed["pairs"][1]["verdict"].get<std::string>(), std::string("rejected"));
        QCOMPARE(listed["pairs"][1]["swapped"].get<bool>(), true);

        r = tunebench({"data", "snapshot", "--store", store, "--json"});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const std::string out = base + "/train-pairs.jsonl";
        r = tunebench(pairs(store, {"export", "train-v1", QString::fromStdString(out)}));
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY(has(r.out, "wrote 2 pairs"));
        std::stringstream text;
        text << std::ifstream(out).rdbuf();
        QCOMPARE(text.str(), std::string("{\"chosen\":\"good\",\"prompt\":\"p1\",\"rejected\":"
                                         "\"bad\"}\n{\"chosen\":\"no\",\"prompt\":\"p2\","
                                         "\"rejected\":\"yes\"}\n"));
    }

    void rankAndErrors()
    {
        QTemporaryDir dir;
        const std::string base = dir.path().toStdString();
        const QString store = QString::fromStdString(base + "/r.tbstore");
        std::ofstream(base + "/one.jsonl") << row("p", "a", "b");
        QCOMPARE(tunebench(pairs(store, {"import", QString::fromStdString(base + "/one.jsonl")}))
                     .exitCode,
                 0);
        Run r = tunebench(pairs(store, {"rank", "new", "Pick", "x", "y", "z", "--json"}));
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const int id = json::parse(r.out)["ranking_id"].get<int>();
        r = tunebench(pairs(store, {"rank", QString::number(id), "1,2,0", "--annotator", "ann"}));
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        QVERIFY(has(r.out, "3 pairs from the ranking"));
        r = tunebench(pairs(store, {"choose", "1", "maybe", "--annotator", "ann"}));
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(has(r.err, "is not a, b, tie or skip"), r.err.c_str());
        r = tunebench(pairs(store, {"import", QString::fromStdString(base + "/none.jsonl")}));
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(has(r.err, base + "/none.jsonl"), r.err.c_str());
        r = tunebench(pairs(store, {"import", "x", "--layout", "dpo"}));
        QVERIFY2(has(r.err, "--layout 'dpo'"), r.err.c_str());
        r = tunebench({"data", "pairs", "frobnicate", store});
        QVERIFY2(has(r.err, "unknown action 'frobnicate'"), r.err.c_str());
    }
};

QTEST_GUILESS_MAIN(TestDataPairsCli)
#include "test_data_pairs_cli.moc"
