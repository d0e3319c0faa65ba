// Interop: every config of the model catalog, built by transformers on the meta device, has the
// parameter count Tunebench computes from config.json and exactly the tensors (names and shapes)
// of Tunebench's module tree from the config.
#include "oracle_util.h"

#include "model/catalog.h"
#include "model/config.h"
#include "model/config_tree.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <map>

class TestCatalogInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchesTransformers()
    {
        if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
            QSKIP("the Python oracle venv is missing (run scripts/setup)");
        QString error;
        const QByteArray out =
            tbtest::runOracleScript(QStringLiteral("catalog_oracle.py"),
                                    {QString::fromStdString(tb::modelCatalogDir())}, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const auto lines = out.trimmed().split('\n');
        const auto oracle = nlohmann::json::parse(lines.last().toStdString());
        const auto catalog = tb::modelCatalog();
        QCOMPARE(oracle.size(), catalog.size());
        for (const tb::CatalogModel& m : catalog) {
            const tb::ModelConfig config = tb::loadModelConfig(m.configPath);
            const auto& want = oracle.at(m.id);
            QVERIFY2(tb::parameterCount(config) == want.at("parameters").get<int64_t>(),
                     m.id.c_str());
            std::map<std::string, std::vector<int64_t>> theirs, ours;
            for (const auto& t : want.at("tensors"))
                theirs[t.at(0).get<std::string>()] = t.at(1).get<std::vector<int64_t>>();
            for (const tb::ConfigTensor& t : tb::configTensors(config))
                ours[t.name] = t.shape;
            for (const auto& [name, shape] : theirs)
                QVERIFY2(ours.count(name) && ours.at(name) == shape, (m.id + ": " + name).c_str());
            QVERIFY2(ours.size() == theirs.size(), m.id.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestCatalogInterop)
#include "test_catalog_interop.moc"
