// Evaluate page (label gui, offscreen): a tiny LoRA run trained here through the Train page's
// controller (its generation-eval points reach the Train page's plot and the run history), then the
// bundled model and that run evaluated on a few held-out cases on the worker: the scorecard table
// shows the numbers core wrote to scorecard.json, the answers are those of a plain greedy
// generate(), sorting, the failing-only filter, cancel, the regression suite, store cases opening
// on the Data page, the blind comparison, and the report writers' escaping and quoting.
#include "compare_view.h"
#include "data_page.h"
#include "eval_controller.h"
#include "eval_report.h"
#include "eval_settings_panel.h"
#include "evaluate_page.h"
#include "example_table_model.h"
#include "main_window.h"
#include "model_page.h"
#include "record_editor.h"
#include "run_history.h"
#include "score_chart.h"
#include "scorecard_model.h"
#include "studio_state.h"
#include "suite_table_model.h"
#include "test_util.h"
#include "train_page.h"
#include "train_plots.h"
#include "train_settings_form.h"
#include "training_controller.h"

#include "data/store/comparisons.h"
#include "data/store/snapshot.h"
#include "model/model.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "train/evaluate_run.h"
#include "train/metrics.h"
#include "train/train_config.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>

namespace {

const QString kModel = QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k");
const QString kVal = QStringLiteral(TB_SOURCE_DIR "/datasets/tiny/val.jsonl");

nlohmann::json readJson(const QString& path)
{
    std::ifstream in(path.toStdString());
    return nlohmann::json::parse(in);
}

std::vector<nlohmann::json> readJsonl(const QString& path)
{
    std::vector<nlohmann::json> rows;
    std::ifstream in(path.toStdString());
    for (std::string line; std::getline(in, line);)
        if (!line.empty())
            rows.push_back(nlohmann::json::parse(line));
    return rows;
}

// Every item model under `root` (views' and combo boxes') under QAbstractItemModelTester.
std::vector<std::unique_ptr<QAbstractItemModelTester>> testModels(QWidget* root)
{
    std::vector<std::unique_ptr<QAbstractItemModelTester>> testers;
    QSet<QAbstractItemModel*> seen;
    auto add = [&](QAbstractItemModel* m) {
        if (m && !seen.contains(m)) {
            seen << m;
            testers.push_back(std::make_unique<QAbstractItemModelTester>(
                m, QAbstractItemModelTester::FailureReportingMode::QtTest));
        }
    };
    for (QAbstractItemView* view : root->findChildren<QAbstractItemView*>())
        add(view->model());
    for (QComboBox* box : root->findChildren<QComboBox*>())
        add(box->model());
    return testers;
}

// A small RFC 4180 reader (quoted fields, doubled quotes, CRLF) for the CSV writer's output.
std::vector<QStringList> parseCsv(const QString& text)
{
    std::vector<QStringList> rows(1);
    QString field;
    bool quoted = false, wasQuoted = false;
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (quoted) {
            if (c == QLatin1Char('"') && i + 1 < text.size() && text[i + 1] == QLatin1Char('"')) {
                field += c;
                ++i;
            } else if (c == QLatin1Char('"')) {
                quoted = false;
            } else {
                field += c;
            }
        } else if (c == QLatin1Char('"') && field.isEmpty() && !wasQuoted) {
            quoted = wasQuoted = true;
        } else if (c == QLatin1Char(',')) {
            rows.back() << field;
            field.clear();
            wasQuoted = false;
        } else if (c == QLatin1Char('\r') && i + 1 < text.size() &&
                   text[i + 1] == QLatin1Char('\n')) {
            rows.back() << field;
            field.clear();
            wasQuoted = false;
            rows.emplace_back();
            ++i;
        } else {
            field += c;
        }
    }
    if (!field.isEmpty() || !rows.back().isEmpty())
        rows.back() << field;
    if (rows.back().isEmpty())
        rows.pop_back();
    return rows;
}

}  // namespace

class TestEvaluatePage : public QObject {
    Q_OBJECT
    std::unique_ptr<QTemporaryDir> m_dir;
    std::unique_ptr<tb::MainWindow> m_window;
    QString m_run;

    tb::EvaluatePage* page() const { return m_window->evaluatePage(); }

    // The settings of a quick comparison of the bundled model and the run on val.jsonl.
    void quickSettings(int cases)
    {
        tb::EvalSettingsPanel* s = page()->settings();
        s->setRunChecked(m_run, true);
        s->setSource(tb::EvalSettingsPanel::JsonlFile);
        s->setDataFile(kVal);
        s->limitBox()->setValue(cases);
        s->setMetrics(
            {QStringLiteral("exact_match"), QStringLiteral("f1"), QStringLiteral("bleu")});
        s->maxTokensBox()->setValue(8);
        s->batchBox()->setValue(4);
        s->resamplesBox()->setValue(200);
    }

private Q_SLOTS:
    void initTestCase()
    {
        tbtest::isolateUserFolders();
        QCoreApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_window = std::make_unique<tb::MainWindow>();
        QSignalSpy opened(m_window->state(), &tb::StudioState::modelChanged);
        m_window->modelPage()->openModel(kModel);
        QVERIFY(opened.wait(15000));
    }
    void cleanupTestCase() { m_window.reset(); }

    // The Train form writes eval.* into the config the run starts with.
    void trainFormMapsEvalKeys()
    {
        tb::TrainSettingsForm* form = m_window->trainPage()->settingsForm();
        form->generateEveryBox()->setValue(7);
        form->generateSampleBox()->setValue(5);
        form->generateTokensBox()->setValue(12);
        QListWidget* list = form->generateMetricsList();
        for (int i = 0; i < list->count(); ++i)
            list->item(i)->setCheckState(
                list->item(i)->text() == QStringLiteral("bleu") ? Qt::Checked : Qt::Unchecked);
        const nlohmann::json j = tb::toJson(m_window->state()->config());
        QCOMPARE(j["eval"]["generate_every"].get<int>(), 7);
        QCOMPARE(j["eval"]["sample"].get<int>(), 5);
        QCOMPARE(j["eval"]["max_new_tokens"].get<int>(), 12);
        QCOMPARE(j["eval"]["metrics"], nlohmann::json::array({"bleu"}));
        form->generateEveryBox()->setValue(0);
    }

    // A real run with eval.generate_every: its onGenerationEval events reach the plot through the
    // controller's buffer, point for point as metrics.jsonl logs them; the history overlays them.
    void trainRunPlotsGenerationEval()
    {
        const std::string dir = m_dir->path().toStdString();
        tb::TrainConfig c =
            tb::loadTrainConfig(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json",
                                {"max_steps=4", "output_dir=" + dir, "name=tiny", "eval_every=4",
                                 "eval.generate_every=2", "eval.sample=3", "eval.max_new_tokens=6",
                                 R"(eval.metrics=["f1","bleu"])"});
        m_window->state()->updateConfig([&](tb::TrainConfig& s) { s.outputDir = dir; });
        tb::TrainPlots* plots = m_window->trainPage()->plots();
        QSignalSpy ended(m_window->controller(), &tb::TrainingController::ended);
        QString error;
        QVERIFY2(m_window->controller()->start(c, &error), qPrintable(error));
        QVERIFY(ended.wait(120000));
        QVERIFY2(ended.first().at(0).toBool(), qPrintable(ended.first().at(1).toString()));
        m_run = m_window->controller()->runDir();
        QTRY_VERIFY(!plots->replotPending());
        const tb::RunMetrics logged = tb::readRunMetrics(m_run.toStdString());
        QVERIFY(logged.generationEvals.size() >= 2);  // steps 2 and 4
        QCOMPARE(plots->generationEvalPoints(), int(2 * logged.generationEvals.size()));
        for (const char* metric : {"f1", "bleu"}) {
            const auto series = plots->generationEvalSeries(QString::fromLatin1(metric));
            QCOMPARE(series.size(), logged.generationEvals.size());
            for (size_t i = 0; i < series.size(); ++i) {
                const auto& g = logged.generationEvals[i];
                QCOMPARE(series[i].first, double(g.step));
                const auto it = std::find_if(g.metrics.begin(), g.metrics.end(),
                                             [&](const auto& p) { return p.first == metric; });
                QVERIFY(it != g.metrics.end());
                QCOMPARE(series[i].second, it->second);
            }
        }
        // BLEU is 0-100: it is on the right axis, which says so.
        QVERIFY(plots->generationRightAxis().contains(QStringLiteral("bleu (0-100)")));
        // Past runs: checking the run in the history overlays its two metric curves.
        tb::RunHistory* history = m_window->trainPage()->runHistory();
        history->refresh();
        const int graphs = plots->generationGraphs();
        for (int i = 0; i < history->count(); ++i)
            if (history->item(i)->data(Qt::UserRole).toString() == m_run)
                history->item(i)->setCheckState(Qt::Checked);
        QTRY_COMPARE(plots->generationGraphs(), graphs + 2);  // read on a worker
        for (int i = 0; i < history->count(); ++i)
            history->item(i)->setCheckState(Qt::Unchecked);
    }

    void pageIsListedAfterPlayground()
    {
        const QStringList names = m_window->pageNames();
        QCOMPARE(names.indexOf(QStringLiteral("Evaluate")),
                 names.indexOf(QStringLiteral("Playground")) + 1);
    }

    void comparisonMatchesCore();
    void quantisedBaseJoinsTheComparison();
    void cancelStopsPromptly();
    void regressionSuite();
    void storeCasesOpenOnDataPage();
    void writersEscapeAndQuote();
};

// Quantised base: NF4 with double quantisation joins as a second base, and the page's scorecard is
// what core's compareRuns gives for the same request; without a run the choice is refused.
void TestEvaluatePage::quantisedBaseJoinsTheComparison()
{
    QVERIFY(!m_run.isEmpty());
    quickSettings(3);
    tb::EvalSettingsPanel* s = page()->settings();
    QComboBox* box = s->quantizedBaseBox();
    QCOMPARE(box->count(), 5);  // off, NF4 double, NF4, FP4, int8
    box->setCurrentIndex(1);
    const std::optional<tb::EvalRequest> request = s->request();
    QVERIFY(request);
    QCOMPARE(request->bases.size(), size_t(2));
    QCOMPARE(request->bases[1].kind, tb::QuantKind::Nf4);
    QVERIFY(request->bases[1].doubleQuant);
    QSignalSpy finished(page(), &tb::EvaluatePage::evaluationFinished);
    QVERIFY(page()->evaluate());
    QVERIFY(finished.wait(180000));
    QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(2).toString()));
    const auto outcome = page()->outcome();
    QVERIFY(outcome && outcome->scorecard);
    QCOMPARE(outcome->labels.size(), 3);
    QCOMPARE(outcome->labels[1], QStringLiteral("base (nf4, double quant)"));
    const tb::EvalCases cases = tb::loadEvalCases(request->data);
    const tb::eval::Scorecard core =
        tb::compareRuns(tb::runBaseModel(m_run.toStdString()), {m_run.toStdString()}, cases,
                        request->settings, {}, nullptr, request->bases);
    QCOMPARE(core.systems.size(), size_t(3));
    for (size_t m = 0; m < core.metrics.size(); ++m)
        for (size_t sys = 0; sys < 3; ++sys)
            QCOMPARE(outcome->scorecard->cells[m][sys].score.score, core.cells[m][sys].score.score);
    // The base alone cannot have a quantised twin here: the page says so before starting.
    s->setRunChecked(m_run, false);
    QString error;
    QVERIFY(!s->request(&error));
    QVERIFY2(error.contains(QStringLiteral("quantised base")), qPrintable(error));
    s->setRunChecked(m_run, true);
    box->setCurrentIndex(0);
    QVERIFY(s->request()->bases.empty());
}

// The scorecard table shows scorecard.json's numbers; the per-example rows are core's predictions;
// the base answers are what a single greedy generate() gives.
void TestEvaluatePage::comparisonMatchesCore()
{
    QVERIFY(!m_run.isEmpty());
    auto testers = testModels(page());
    quickSettings(4);
    QSignalSpy finished(page(), &tb::EvaluatePage::evaluationFinished);
    QVERIFY(page()->evaluate());
    QVERIFY(page()->busy());
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(2).toString()));
    QVERIFY(!page()->busy());
    QCOMPARE(page()->progressBar()->value(), 8);  // 4 cases x 2 systems
    QCOMPARE(page()->progressBar()->maximum(), 8);
    const auto outcome = page()->outcome();
    QVERIFY(outcome && outcome->scorecard);

    const nlohmann::json sc = readJson(outcome->dir + QStringLiteral("/scorecard.json"));
    tb::ScorecardModel* model = page()->scorecardModel();
    const auto metrics = sc["metrics"].get<std::vector<std::string>>();
    QCOMPARE(model->rowCount(), int(metrics.size()));
    QCOMPARE(model->columnCount(), 1 + 2 + 1);
    QCOMPARE(sc["systems"].size(), size_t(2));
    for (int row = 0; row < model->rowCount(); ++row) {
        const std::string& m = metrics[size_t(row)];
        QCOMPARE(model->index(row, 0).data(tb::ScorecardModel::ValueRole).toString(),
                 QString::fromStdString(m));
        for (int s = 0; s < 2; ++s) {
            const nlohmann::json& cell = sc["systems"][size_t(s)]["metrics"][m];
            const QModelIndex i = model->index(row, model->scoreColumn(s));
            QCOMPARE(i.data(tb::ScorecardModel::ValueRole).toDouble(), cell["score"].get<double>());
            QCOMPARE(i.data(tb::ScorecardModel::LowRole).toDouble(), cell["ci"][0].get<double>());
            QCOMPARE(i.data(tb::ScorecardModel::HighRole).toDouble(), cell["ci"][1].get<double>());
        }
        const nlohmann::json& d = sc["systems"][1]["metrics"][m]["delta"];
        const QModelIndex di = model->index(row, model->deltaColumn(1));
        QCOMPARE(di.data(tb::ScorecardModel::ValueRole).toDouble(), d["value"].get<double>());
        QCOMPARE(di.data(tb::ScorecardModel::LowRole).toDouble(), d["ci"][0].get<double>());
        QCOMPARE(di.data(tb::ScorecardModel::HighRole).toDouble(), d["ci"][1].get<double>());
        // The length has no better / worse (scorecard.json leaves "better" out): longer / shorter.
        const bool excludes = d["excludes_zero"].get<bool>();
        const QString verdict = !excludes ? QStringLiteral("no clear difference")
                                : !d.contains("better")
                                    ? (d["value"].get<double>() > 0 ? QStringLiteral("longer")
                                                                    : QStringLiteral("shorter"))
                                : d["better"].get<bool>() ? QStringLiteral("better")
                                                          : QStringLiteral("worse");
        QCOMPARE(d.contains("better"), m != "length");
        QCOMPARE(di.data(tb::ScorecardModel::VerdictRole).toString(), verdict);
        QVERIFY(di.data().toString().endsWith(verdict));
    }
    // The chart: one bars plottable per system, the length left out, intervals as error bars.
    tb::ScoreChart* chart = page()->chart();
    QCOMPARE(chart->bars().size(), size_t(2));
    QCOMPARE(chart->tickLabels().size(), qsizetype(metrics.size() - 1));
    QVERIFY(chart->tickLabels().contains(QStringLiteral("bleu ÷100")));
    // The run's bars: its scores (0-100 ones divided by 100) and their intervals.
    const auto bars = chart->barsOf(1);
    QCOMPARE(bars.size(), metrics.size() - 1);
    for (size_t i = 0, row = 0; row < metrics.size(); ++row) {
        if (metrics[row] == "length")
            continue;
        const double k = metrics[row] == "bleu" ? 0.01 : 1.0;
        const nlohmann::json& cell = sc["systems"][1]["metrics"][metrics[row]];
        QVERIFY(qAbs(bars[i][0] - k * cell["score"].get<double>()) < 1e-12);
        QVERIFY(qAbs(bars[i][1] - k * cell["ci"][0].get<double>()) < 1e-12);
        QVERIFY(qAbs(bars[i][2] - k * cell["ci"][1].get<double>()) < 1e-12);
        ++i;
    }

    // The per-example rows: core's predictions and scores (system-N/predictions.jsonl).
    tb::ExampleTableModel* ex = page()->exampleModel();
    const auto base = readJsonl(outcome->dir + QStringLiteral("/system-0/predictions.jsonl"));
    const auto tuned = readJsonl(outcome->dir + QStringLiteral("/system-1/predictions.jsonl"));
    QCOMPARE(ex->rowCount(), 4);
    QCOMPARE(base.size(), size_t(4));
    int failing = 0;
    for (int r = 0; r < 4; ++r) {
        QCOMPARE(ex->index(r, tb::ExampleTableModel::BaseColumn).data(Qt::ToolTipRole).toString(),
                 QString::fromStdString(base[size_t(r)]["prediction"].get<std::string>()));
        QCOMPARE(ex->index(r, tb::ExampleTableModel::RunColumn).data(Qt::ToolTipRole).toString(),
                 QString::fromStdString(tuned[size_t(r)]["prediction"].get<std::string>()));
        bool worse = false;
        for (const char* m : {"exact_match", "f1", "bleu", "stop_rate"}) {
            const double b = base[size_t(r)]["scores"][m].get<double>();
            const double t = tuned[size_t(r)]["scores"][m].get<double>();
            QCOMPARE(ex->index(r, ex->metricColumn(m, 0))
                         .data(tb::ExampleTableModel::SortRole)
                         .toDouble(),
                     b);
            QCOMPARE(ex->index(r, ex->metricColumn(m, 2))
                         .data(tb::ExampleTableModel::SortRole)
                         .toDouble(),
                     t - b);
            worse = worse || t < b;
        }
        failing += worse;
        QCOMPARE(ex->failing(r), worse);
    }
    // Independently: the base model's first answer is a single greedy generate() of the same
    // prompt in the run's template (alpaca), stopping at its end-of-turn ids.
    {
        const auto m = tb::Model::load(kModel.toStdString(), {"fp32", "auto"});
        const auto tok = tb::loadTokenizer(kModel.toStdString());
        const auto chat = tb::chatTemplateByName("alpaca", kModel.toStdString());
        QVERIFY(chat);
        tb::GenerateOptions o;
        o.greedy = true;
        o.maxNewTokens = 8;
        o.stopTokenIds = tb::chatStopIds(*chat, *tok);
        const auto ids = tb::chatPromptIds(
            *chat, *tok,
            tb::jinja::Value::array(
                {{{"role", "user"}, {"content", "Write about Sue, a pig and the river."}}}));
        QCOMPARE(ex->index(0, tb::ExampleTableModel::BaseColumn).data(Qt::ToolTipRole).toString(),
                 QString::fromStdString(m->generate(ids, o, tok.get()).text));
    }
    // Sorted by the f1 difference, descending; failing only keeps exactly the worse rows.
    tb::ExampleFilterProxy* proxy = page()->exampleProxy();
    const int deltaF1 = ex->metricColumn("f1", 2);
    page()->exampleView()->sortByColumn(deltaF1, Qt::DescendingOrder);
    for (int r = 1; r < proxy->rowCount(); ++r)
        QVERIFY(proxy->index(r - 1, deltaF1).data(tb::ExampleTableModel::SortRole).toDouble() >=
                proxy->index(r, deltaF1).data(tb::ExampleTableModel::SortRole).toDouble());
    page()->failingOnlyBox()->setChecked(true);
    QCOMPARE(proxy->rowCount(), failing);
    for (int r = 0; r < proxy->rowCount(); ++r)
        QVERIFY(proxy->index(r, 0).data(tb::ExampleTableModel::FailingRole).toBool());
    page()->failingOnlyBox()->setChecked(false);
    QCOMPARE(proxy->rowCount(), 4);
    page()->exampleView()->selectRow(0);
    QVERIFY(page()->diffView()->toPlainText().contains(QStringLiteral("Reference:")));

    // The Markdown export is core's scorecard.md; the CSV has one row per case.
    QString error;
    const QString md = m_dir->filePath(QStringLiteral("report.md"));
    QVERIFY2(page()->exportReport(md, tb::EvaluatePage::ReportFormat::Markdown, &error),
             qPrintable(error));
    QFile a(md), b(outcome->dir + QStringLiteral("/scorecard.md"));
    QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
    QCOMPARE(a.readAll(), b.readAll());
    const QString csv = m_dir->filePath(QStringLiteral("report.csv"));
    QVERIFY(page()->exportReport(csv, tb::EvaluatePage::ReportFormat::Csv, &error));
    QFile c(csv);
    QVERIFY(c.open(QIODevice::ReadOnly));
    const auto rows = parseCsv(QString::fromUtf8(c.readAll()));
    QCOMPARE(rows.size(), size_t(5));
    QCOMPARE(rows[1][2], QStringLiteral("Write about Sue, a pig and the river."));

    // The Export buttons write on a worker; the file is the same.
    const QString html = m_dir->filePath(QStringLiteral("report.html"));
    QVERIFY(page()->exportReport(html, tb::EvaluatePage::ReportFormat::Html, &error));
    const QString background = m_dir->filePath(QStringLiteral("report-worker.html"));
    QSignalSpy written(page(), &tb::EvaluatePage::reportWritten);
    page()->exportReportInBackground(background, tb::EvaluatePage::ReportFormat::Html);
    QVERIFY(written.wait(30000));
    QCOMPARE(written.first().at(1).toString(), QString());
    QVERIFY(page()->statusText().contains(QStringLiteral("Wrote")));
    QFile h1(html), h2(background);
    QVERIFY(h1.open(QIODevice::ReadOnly) && h2.open(QIODevice::ReadOnly));
    QCOMPARE(h2.readAll(), h1.readAll());
    written.clear();
    page()->exportReportInBackground(m_dir->filePath(QStringLiteral("no/such/folder/r.html")),
                                     tb::EvaluatePage::ReportFormat::Html);
    QVERIFY(written.wait(30000));
    QVERIFY(!written.first().at(1).toString().isEmpty());
    QVERIFY(page()->statusText().contains(QStringLiteral("Could not write")));
}

// Cancel during an evaluation of all 80 cases: the worker stops after its batch, nothing is kept,
// the page is idle again.
void TestEvaluatePage::cancelStopsPromptly()
{
    const auto before = page()->outcome();
    quickSettings(0);
    page()->settings()->batchBox()->setValue(1);
    page()->settings()->maxTokensBox()->setValue(24);
    QSignalSpy progress(page()->controller(), &tb::EvalController::progress);
    QSignalSpy finished(page(), &tb::EvaluatePage::evaluationFinished);
    QVERIFY(page()->evaluate());
    QVERIFY(!page()->evaluateButton()->isEnabled());
    QVERIFY(page()->cancelButton()->isEnabled());
    QVERIFY(progress.wait(60000));
    QElapsedTimer clock;
    clock.start();
    page()->cancel();
    QVERIFY(finished.wait(20000));
    qInfo("cancelled %lld ms after asking", clock.elapsed());
    QVERIFY(clock.elapsed() < 10000);
    QCOMPARE(finished.first().at(0).toBool(), false);
    QCOMPARE(finished.first().at(1).toBool(), true);
    QVERIFY(progress.last().at(0).toLongLong() < progress.last().at(1).toLongLong());
    QVERIFY(!page()->busy());
    QVERIFY(page()->evaluateButton()->isEnabled());
    QVERIFY(!page()->cancelButton()->isEnabled());
    QCOMPARE(page()->outcome(), before);  // the last complete evaluation stays
}

void TestEvaluatePage::regressionSuite()
{
    auto testers = testModels(page());
    const QString suite = m_dir->filePath(QStringLiteral("suite.jsonl"));
    {
        QFile f(suite);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(
            R"({"id": "short", "prompt": "Tell me about Sam and the mouse.", "checks": [{"max_tokens": 1000}]}
{"id": "never", "prompt": "Tell me about Sam and the mouse.", "checks": [{"contains": "zzqqzz"}]}
{"id": "required", "prompt": "Tell me about Tim.", "checks": [{"not_contains": "zzqqzz"}], "required": true}
)");
    }
    QSignalSpy finished(page(), &tb::EvaluatePage::suiteFinished);
    QVERIFY(page()->runSuite(suite, m_run));
    QVERIFY(finished.wait(60000));
    QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(2).toString()));
    tb::SuiteTableModel* m = page()->suiteModel();
    QCOMPARE(m->rowCount(), 3);
    const QStringList status{QStringLiteral("pass"), QStringLiteral("fail"),
                             QStringLiteral("pass")};
    for (int r = 0; r < 3; ++r) {
        QCOMPARE(m->index(r, tb::SuiteTableModel::StatusColumn).data().toString(), status[r]);
        QCOMPARE(m->index(r, tb::SuiteTableModel::BaseColumn).data().toString(), status[r]);
    }
    QVERIFY(m->index(1, tb::SuiteTableModel::ReasonsColumn)
                .data()
                .toString()
                .contains(QStringLiteral("zzqqzz")));
    QVERIFY(page()->gateText().contains(QStringLiteral("passes")));
    // The table is core's report, as written to suite.json.
    const nlohmann::json j =
        readJson(page()->controller()->lastSuite()->dir + QStringLiteral("/suite.json"));
    QCOMPARE(j["summary"]["passed"].get<int>(), 2);
    QCOMPARE(j["summary"]["regressions"].get<int>(), 0);
    QCOMPARE(j["summary"]["gate_failed"].get<bool>(), false);
    for (int r = 0; r < 3; ++r) {
        const nlohmann::json& c = j["cases"][size_t(r)];
        QCOMPARE(m->index(r, 0).data().toString(),
                 QString::fromStdString(c["id"].get<std::string>()));
        QCOMPARE(m->index(r, tb::SuiteTableModel::TunedColumn).data().toString(),
                 c["tuned"]["passed"].get<bool>() ? QStringLiteral("pass")
                                                  : QStringLiteral("fail"));
        QCOMPARE(m->index(r, tb::SuiteTableModel::BaseColumn).data().toString(),
                 c["base"]["passed"].get<bool>() ? QStringLiteral("pass") : QStringLiteral("fail"));
    }
    // A cancel that comes after the last case is still a cancel: no result, nothing written.
    tb::SuiteRequest late;
    late.runDir = m_run;
    late.suiteFile = suite;
    late.maxNewTokens = 8;
    late.skipBase = true;
    late.outDir = m_dir->filePath(QStringLiteral("suite-cancelled-late"));
    int ends = 0;
    const auto out = tb::runSuiteRequest(late, [&ends](int64_t done, int64_t total) {
        if (ends > 0)
            return false;
        ends += done == total ? 1 : 0;
        return true;
    });
    QCOMPARE(ends, 1);
    QVERIFY(!out);
    QVERIFY(!QFile::exists(late.outDir + QStringLiteral("/suite.json")));
}

// Cases from a snapshot of the project's store carry record ids: a double-click opens the record
// on the Data page. Then the blind comparison puts both answers into that store.
void TestEvaluatePage::storeCasesOpenOnDataPage()
{
    tb::DataPage* data = m_window->dataPage();
    QSignalSpy opened(data, &tb::DataPage::storeOpened);
    data->openBundledStore(m_dir->filePath(QStringLiteral("tiny.tbstore")));
    QVERIFY(opened.wait(60000));
    tb::SnapshotOptions so;
    so.split = "validation";
    so.acceptedOnly = false;
    const tb::SnapshotInfo snap = tb::createSnapshot(*data->store(), so);
    tb::EvalSettingsPanel* s = page()->settings();
    quickSettings(3);
    QSignalSpy listed(s, &tb::EvalSettingsPanel::snapshotsListed);
    s->setSource(tb::EvalSettingsPanel::StoreSnapshot);
    QVERIFY(listed.wait(10000));
    s->snapshotBox()->setCurrentIndex(s->snapshotBox()->findText(QString::fromStdString(snap.id)));
    QSignalSpy finished(page(), &tb::EvaluatePage::evaluationFinished);
    QVERIFY(page()->evaluate());
    QVERIFY(finished.wait(60000));
    QVERIFY2(finished.first().at(0).toBool(), qPrintable(finished.first().at(2).toString()));
    tb::ExampleTableModel* ex = page()->exampleModel();
    QCOMPARE(ex->rowCount(), 3);
    const qint64 id = ex->recordId(0);
    QVERIFY(id > 0);
    QCOMPARE(
        QString::fromStdString(data->store()->record(id).fields["instruction"].get<std::string>()),
        ex->index(0, tb::ExampleTableModel::PromptColumn).data(Qt::ToolTipRole).toString());
    QSignalSpy show(page(), &tb::EvaluatePage::showRecordRequested);
    m_window->show();
    page()->failingOnlyBox()->setChecked(false);
    const QModelIndex first = page()->exampleProxy()->mapFromSource(ex->index(0, 0));
    Q_EMIT page()->exampleView()->doubleClicked(first);
    QCOMPARE(show.size(), 1);
    QCOMPARE(show.first().at(0).toLongLong(), id);
    QVERIFY(data->isVisible());  // the window switched to the Data page
    QCOMPARE(data->editor()->recordId().value_or(0), id);
    m_window->hide();

    // Blind comparison: the base model's and the run's answers, as a set in the project's store.
    QVERIFY(page()->startBlindComparison(1));
    tb::CompareView* view = page()->compareView();
    QVERIFY(view);
    const std::vector<std::string> sets = tb::comparisonSets(*data->store());
    QCOMPARE(sets.size(), size_t(1));
    QCOMPARE(view->set(), QString::fromStdString(sets.front()));
    const auto items = tb::comparisonItems(*data->store(), sets.front());
    QCOMPARE(items.size(), size_t(3));
    const auto outcome = page()->outcome();
    for (const tb::ComparisonItem& item : items) {
        QCOMPARE(item.sourceX, std::string("base"));
        QCOMPARE(item.sourceY, outcome->labels[1].toStdString());
        const auto& base = outcome->results[0].predictions;
        const auto it = std::find_if(base.begin(), base.end(), [&](const auto& p) {
            return tb::promptText(p.input).toStdString() == item.prompt;
        });
        QVERIFY(it != base.end());
        const size_t i = size_t(it - base.begin());
        QCOMPARE(item.answerX, base[i].prediction);
        QCOMPARE(item.answerY, outcome->results[1].predictions[i].prediction);
    }
    view->setAnnotator(QStringLiteral("ana"));
    QVERIFY2(view->judge(QStringLiteral("a")), qPrintable(view->message()));
    QCOMPARE(tb::comparisonProgress(*data->store(), sets.front(), "ana").judged, qint64(1));
}

void TestEvaluatePage::writersEscapeAndQuote()
{
    QCOMPARE(tb::csvField(QStringLiteral("plain")), QStringLiteral("plain"));
    QCOMPARE(tb::csvField(QStringLiteral("a,b")), QStringLiteral("\"a,b\""));
    QCOMPARE(tb::csvField(QStringLiteral("say \"hi\"")), QStringLiteral("\"say \"\"hi\"\"\""));
    QCOMPARE(tb::csvField(QStringLiteral("two\nlines")), QStringLiteral("\"two\nlines\""));
    QCOMPARE(tb::htmlEscape(QStringLiteral("<a href=\"x\">&'</a>")),
             QStringLiteral("&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"));
    // A made-up outcome whose texts hold every special character.
    const QString nasty = QStringLiteral("x, \"y\"\nz <&> end");
    tb::EvalOutcome o;
    o.labels << QStringLiteral("base");
    tb::eval::EvalResult r;
    r.metricOrder = {"exact_match"};
    r.metrics["exact_match"] = tb::eval::CorpusScore{0.5, {0.25, 0.75}};
    tb::eval::EvalPrediction p;
    p.input.id = "cases.jsonl:1";
    p.input.source = nasty.toStdString();
    p.input.references = {"ref, one"};
    p.prediction = nasty.toStdString();
    p.scores["exact_match"] = 0.5;
    r.predictions = {p, p};
    o.results.push_back(r);
    const auto rows = parseCsv(tb::examplesCsv(o));
    QCOMPARE(rows.size(), size_t(3));
    QCOMPARE(rows[0],
             (QStringList{QStringLiteral("id"), QStringLiteral("record_id"),
                          QStringLiteral("prompt"), QStringLiteral("reference"),
                          QStringLiteral("base answer"), QStringLiteral("exact_match base")}));
    QCOMPARE(rows[1][2], nasty);
    QCOMPARE(rows[1][3], QStringLiteral("ref, one"));
    QCOMPARE(rows[1][4], nasty);
    QCOMPARE(rows[1][5], QStringLiteral("0.5"));
    const QString html = tb::reportHtml(o);
    QVERIFY(html.startsWith(QStringLiteral("<!DOCTYPE html>")));
    QVERIFY(html.contains(QStringLiteral("x, &quot;y&quot;\nz &lt;&amp;&gt; end")));
    QVERIFY(!html.contains(QStringLiteral("<&>")));
    QVERIFY(html.contains(QStringLiteral("0.5000 [0.2500, 0.7500]")));
    const QString md = tb::reportMarkdown(o);
    QVERIFY(md.contains(QStringLiteral("| exact_match | 0.5000 [0.2500, 0.7500] |")));
    // The word diff marks what differs and escapes the rest.
    const auto [a, b] =
        tb::wordDiffHtml(QStringLiteral("the <cat> sat"), QStringLiteral("the dog sat"));
    QVERIFY(a.contains(QStringLiteral("line-through\">&lt;cat&gt;</span>")));
    QVERIFY(b.contains(QStringLiteral("#d5f5e3\">dog</span>")));
    QVERIFY(b.startsWith(QStringLiteral("the ")));
}

QTEST_MAIN(TestEvaluatePage)
#include "test_evaluate_page.moc"
