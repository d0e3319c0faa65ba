// Preference tuning in the studio (label gui, offscreen): the Method page's objective controls
// write the run config and the memory estimate follows core's for the objective and for SFT; the
// Train page's preference plots get their points from synthetic job events fed through the
// training controller's buffer, and past runs' statistics overlay them; the Export page offers a
// reward run only its transformers classifier, and other runs everything but that.
#include "export_page.h"
#include "main_window.h"
#include "memory_page.h"
#include "method_page.h"
#include "model_page.h"
#include "objective_panel.h"
#include "playground_page.h"
#include "preference_plots.h"
#include "ranked_answers_model.h"
#include "run_history.h"
#include "studio_state.h"
#include "test_util.h"
#include "train_page.h"
#include "train_plots.h"
#include "training_controller.h"

#include "memory/estimator.h"
#include "train/metrics.h"
#include "util/file_util.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QListWidget>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

namespace {

const QString kModel = QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k");

std::unique_ptr<tb::MainWindow> openWindow()
{
    auto w = std::make_unique<tb::MainWindow>();
    QSignalSpy spy(w->state(), &tb::StudioState::modelChanged);
    w->modelPage()->openModel(kModel);
    if (!spy.wait(15000))
        return nullptr;
    w->state()->updateConfig([](tb::TrainConfig& c) {
        c.batchSize = 4;
        c.data.maxLength = 64;
    });
    return w;
}

// Core's estimated peak for the config, as the Method page asks for it (no advice).
qint64 coreTotal(const tb::ModelConfig& model, const tb::TrainConfig& run)
{
    tb::EstimateOptions o = tb::estimateOptionsFor(run, run.data.maxLength);
    o.advise = false;
    return tb::estimateMemory(model, run, o).total;
}

tb::PreferenceStats stats(int step, bool orpo = false)
{
    tb::PreferenceStats p;
    p.rewardsChosen = 0.1 * step;
    p.rewardsRejected = -0.05 * step;
    p.rewardsMargins = p.rewardsChosen - p.rewardsRejected;
    p.rewardsAccuracies = std::min(1.0, 0.5 + 0.01 * step);
    p.logpsChosen = -40.0 + step;
    p.logpsRejected = -45.0 - step;
    if (orpo) {
        p.nllLoss = 2.0 - 0.01 * step;
        p.logOddsRatio = -0.7 + 0.02 * step;
    }
    p.pairs = 4;
    return p;
}

tb::StepMetrics step(int i, bool preference)
{
    tb::StepMetrics m;
    m.step = i;
    m.totalSteps = 100;
    m.loss = 0.69 - 0.001 * i;
    m.lr = 1e-4;
    if (preference)
        m.preference = stats(i);
    return m;
}

void writeRunJson(const QString& dir, const char* objective)
{
    QDir().mkpath(dir);
    const nlohmann::json info = {{"config", {{"objective", objective}, {"method", "lora"}}}};
    tb::writeFileAtomic(QString(dir + QStringLiteral("/run.json")).toStdString(), info.dump(2));
}

}  // namespace

class TestPreferenceUi : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        tbtest::isolateUserFolders();
        QCoreApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
    }

    // Each objective writes itself and its options into the config and shows only its options.
    void objectiveControlsWriteConfig()
    {
        auto w = openWindow();
        QVERIFY(w);
        tb::ObjectivePanel* panel = w->methodPage()->objectivePanel();
        QVERIFY(panel);
        QAbstractItemModelTester objectives(panel->objectiveBox()->model(),
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester references(panel->referenceBox()->model(),
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(panel->objectiveBox()->count(), 6);
        for (int i = 0; i < panel->objectiveBox()->count(); ++i)  // one sentence each
            QVERIFY(panel->objectiveBox()->itemData(i, Qt::ToolTipRole).toString().size() > 40);
        const tb::TrainConfig& c = w->state()->config();
        QCOMPARE(c.objective, tb::Objective::Sft);
        QVERIFY(!panel->rowShown(panel->betaBox()));
        QVERIFY(!panel->rowShown(panel->referenceBox()));

        QSignalSpy changed(w->state(), &tb::StudioState::configChanged);
        panel->chooseObjective(QStringLiteral("dpo"));
        QCOMPARE(c.objective, tb::Objective::Dpo);
        QCOMPARE(changed.last().at(0).value<QObject*>(), static_cast<QObject*>(panel));
        QVERIFY(panel->rowShown(panel->betaBox()));
        QVERIFY(panel->rowShown(panel->labelSmoothingBox()));
        QVERIFY(panel->rowShown(panel->referenceBox()));
        QVERIFY(panel->rowShown(panel->layoutBox()));
        QVERIFY(!panel->rowShown(panel->gammaBox()));
        panel->betaBox()->setValue(0.25);
        panel->labelSmoothingBox()->setValue(0.1);
        panel->referenceBox()->setCurrentIndex(
            panel->referenceBox()->findData(static_cast<int>(tb::ReferenceKind::Precomputed)));
        QCOMPARE(c.preference.beta, 0.25);
        QCOMPARE(c.preference.labelSmoothing, 0.1);
        QCOMPARE(c.preference.reference, tb::ReferenceKind::Precomputed);
        // What the run file gets, in core's keys.
        const nlohmann::json j = tb::toJson(c);
        QCOMPARE(j.at("objective").get<std::string>(), std::string("dpo"));
        QCOMPARE(j.at("preference").at("beta").get<double>(), 0.25);
        QCOMPARE(j.at("preference").at("reference").get<std::string>(), std::string("precomputed"));

        panel->chooseObjective(QStringLiteral("simpo"));
        QCOMPARE(c.objective, tb::Objective::Simpo);
        QVERIFY(panel->rowShown(panel->gammaBox()));
        QVERIFY(panel->rowShown(panel->labelSmoothingBox()));
        QVERIFY(!panel->rowShown(panel->referenceBox()));  // reference-free
        panel->gammaBox()->setValue(1.5);
        QCOMPARE(c.preference.gamma, 1.5);

        for (const char* name : {"ipo", "orpo"}) {
            panel->chooseObjective(QString::fromLatin1(name));
            QCOMPARE(QString::fromLatin1(tb::objectiveName(c.objective)),
                     QString::fromLatin1(name));
            QVERIFY(panel->rowShown(panel->betaBox()));  // tau, lambda
            QVERIFY(!panel->rowShown(panel->labelSmoothingBox()));
            QVERIFY(!panel->rowShown(panel->gammaBox()));
            QCOMPARE(panel->rowShown(panel->referenceBox()), std::string(name) == "ipo");
        }
        panel->chooseObjective(QStringLiteral("reward"));
        QCOMPARE(c.objective, tb::Objective::Reward);
        QVERIFY(!panel->rowShown(panel->betaBox()));
        QVERIFY(panel->rowShown(panel->layoutBox()));
        QVERIFY(panel->objectiveBox()->toolTip().contains(QStringLiteral("score")));

        // A config from outside (a project opened) rewrites the controls.
        w->state()->updateConfig([](tb::TrainConfig& cfg) {
            cfg.objective = tb::Objective::Ipo;
            cfg.preference.beta = 0.7;
        });
        QCOMPARE(panel->objectiveBox()->currentData().toString(), QStringLiteral("ipo"));
        QCOMPARE(panel->betaBox()->value(), 0.7);
    }

    // The memory line is core's estimate for the objective beside SFT's, and it follows the method
    // (auto reference: the policy itself for LoRA, a frozen copy for full fine-tuning).
    void estimateFollowsObjective()
    {
        auto w = openWindow();
        QVERIFY(w);
        tb::ObjectivePanel* panel = w->methodPage()->objectivePanel();
        const tb::ModelConfig& model = *w->state()->modelConfig();
        const qint64 sftTotal = coreTotal(model, w->state()->config());
        QCOMPARE(panel->estimateBytes(), sftTotal);
        QVERIFY(panel->memoryText().contains(QStringLiteral("Estimated peak memory")));

        w->methodPage()->chooseMethod(QStringLiteral("full"));
        panel->chooseObjective(QStringLiteral("dpo"));
        QCOMPARE(w->memoryPage()->estimateOptions().objective, std::string("dpo"));
        QCOMPARE(w->memoryPage()->estimateOptions().reference, std::string("copy"));
        tb::TrainConfig run = w->state()->config();
        QCOMPARE(panel->estimateBytes(), coreTotal(model, run));
        tb::TrainConfig sft = run;
        sft.objective = tb::Objective::Sft;
        QCOMPARE(panel->sftEstimateBytes(), coreTotal(model, sft));
        auto checkText = [&] {
            const qint64 delta = panel->estimateBytes() - panel->sftEstimateBytes();
            if (delta == 0) {
                QVERIFY2(panel->memoryText().contains(QStringLiteral("same as SFT")),
                         qPrintable(panel->memoryText()));
            } else {
                const QString shown = QString::fromStdString(tb::formatBytes(std::llabs(delta)));
                QVERIFY2(panel->memoryText().contains(shown + QStringLiteral(" vs SFT")),
                         qPrintable(panel->memoryText()));
            }
        };
        checkText();
        qInfo("full, dpo, copy: %s", qPrintable(panel->memoryText()));
        // The Memory page draws the SFT setup beside the chosen one.
        QCOMPARE(w->memoryPage()->categories().size(), 7);  // chosen, SFT, 4 methods, QLoRA
        QCOMPARE(w->memoryPage()->categories().at(1), QStringLiteral("Full\nSFT"));
        QVERIFY(w->memoryPage()->verdictText().contains(QStringLiteral("vs SFT")));

        // LoRA: the reference is the policy with its adapters off.
        w->methodPage()->chooseMethod(QStringLiteral("lora"));
        QCOMPARE(w->memoryPage()->estimateOptions().reference, std::string("off"));
        run = w->state()->config();
        QCOMPARE(panel->estimateBytes(), coreTotal(model, run));
        checkText();
        // Precomputed: no reference in memory.
        panel->referenceBox()->setCurrentIndex(
            panel->referenceBox()->findData(static_cast<int>(tb::ReferenceKind::Precomputed)));
        QCOMPARE(w->memoryPage()->estimateOptions().reference, std::string("precomputed"));
        QCOMPARE(panel->estimateBytes(), coreTotal(model, w->state()->config()));
        checkText();
        // A larger micro-batch from the Memory page re-estimates here too.
        const qint64 before = panel->estimateBytes();
        w->memoryPage()->batchSlider()->setValue(w->memoryPage()->batchSlider()->value() + 1);
        QCOMPARE(panel->estimateBytes(), coreTotal(model, w->state()->config()));
        QVERIFY(panel->estimateBytes() > before);
        checkText();

        panel->chooseObjective(QStringLiteral("sft"));
        QCOMPARE(w->memoryPage()->categories().size(), 6);
        QCOMPARE(w->memoryPage()->estimateOptions().reference, std::string("none"));
    }

    // Steps and evals with preference statistics, reported on another thread through the
    // controller's sink, reach the preference plots in drained batches; SFT steps show none.
    void preferencePlotsFromControllerEvents()
    {
        tb::MainWindow w;
        tb::TrainPlots* plots = w.trainPage()->plots();
        tb::PreferencePlots* pref = plots->preferencePlots();
        QSignalSpy arrived(w.controller(), &tb::TrainingController::eventsArrived);
        const int drainsBefore = w.controller()->drains();
        std::thread sft([&] {
            for (int i = 1; i <= 5; ++i)
                w.controller()->events().onStep(step(i, false));
        });
        sft.join();
        QTRY_COMPARE(plots->lossPoints(), 5);
        QVERIFY(!plots->preferenceShown());
        QVERIFY(!pref->hasPoints());

        plots->clear();
        std::thread dpo([&] {
            for (int i = 1; i <= 40; ++i) {
                w.controller()->events().onStep(step(i, true));
                if (i % 20 == 0) {
                    tb::EvalMetrics e;
                    e.step = i;
                    e.valLoss = 0.6;
                    e.preference = stats(i);
                    e.preference->rewardsAccuracies = 0.75;
                    w.controller()->events().onEval(e);
                }
            }
        });
        dpo.join();
        QTRY_COMPARE(plots->lossPoints(), 40);
        QVERIFY(w.controller()->drains() > drainsBefore);
        QVERIFY(arrived.count() < 45);  // batched, not one signal per event
        QVERIFY(plots->preferenceShown());
        const auto margins = pref->series(QStringLiteral("rewards/margins"));
        QCOMPARE(int(margins.size()), 40);
        for (const auto& [x, y] : margins)
            QVERIFY(qAbs(y - 0.15 * x) < 1e-9);
        const auto chosen = pref->series(QStringLiteral("rewards/chosen"));
        const auto rejected = pref->series(QStringLiteral("rewards/rejected"));
        QCOMPARE(int(chosen.size()), 40);
        QCOMPARE(chosen.back().second, 4.0);
        QCOMPARE(rejected.back().second, -2.0);
        QCOMPARE(pref->series(QStringLiteral("logps/rejected")).front().second, -46.0);
        QCOMPARE(pref->series(QStringLiteral("rewards/accuracies")).size(), size_t(40));
        const auto evalAccuracy = pref->series(QStringLiteral("eval/rewards/accuracies"));
        QCOMPARE(int(evalAccuracy.size()), 2);
        QCOMPARE(evalAccuracy[0], std::make_pair(20.0, 0.75));
        QCOMPARE(evalAccuracy[1], std::make_pair(40.0, 0.75));
        QCOMPARE(pref->series(QStringLiteral("eval/rewards/margins")).size(), size_t(2));
        QVERIFY(pref->series(QStringLiteral("nll_loss")).empty());  // not ORPO

        // The plots' export carries the statistics; a new run starts them empty.
        QTemporaryDir out;
        QStringList written;
        QVERIFY(plots->exportPng(out.path(), &written));
        QVERIFY(written.contains(out.path() + QStringLiteral("/reward-margin.png")));
        QVERIFY(plots->exportCsv(out.path() + QStringLiteral("/m.csv")));
        const QString csv = QString::fromStdString(
            tb::readFile(QString(out.path() + QStringLiteral("/m.csv")).toStdString()));
        QVERIFY(csv.section(QLatin1Char('\n'), 0, 0).endsWith(QStringLiteral("logps/rejected")));
        plots->clear();
        QVERIFY(pref->series(QStringLiteral("rewards/margins")).empty());
        QVERIFY(!plots->preferenceShown());
    }

    // A checked past run with preference statistics overlays its margins and accuracies.
    void historyOverlaysPreferenceRuns()
    {
        QTemporaryDir runs;
        const QString dir = runs.path() + QStringLiteral("/lora-dpo-1");
        writeRunJson(dir, "dpo");
        std::string lines;
        for (int i = 1; i <= 10; ++i) {
            tb::StepMetrics m = step(i, true);
            m.preference = stats(i, true);
            lines += tb::toJson(m).dump() + "\n";
        }
        tb::writeFileAtomic(QString(dir + QStringLiteral("/metrics.jsonl")).toStdString(), lines);
        const QString sftDir = runs.path() + QStringLiteral("/lora-1");
        writeRunJson(sftDir, "sft");
        tb::writeFileAtomic(QString(sftDir + QStringLiteral("/metrics.jsonl")).toStdString(),
                            tb::toJson(step(1, false)).dump() + "\n");

        tb::MainWindow w;
        w.state()->updateConfig(
            [&](tb::TrainConfig& c) { c.outputDir = runs.path().toStdString(); });
        tb::RunHistory* history = w.trainPage()->runHistory();
        history->refresh();
        QCOMPARE(history->count(), 2);
        tb::TrainPlots* plots = w.trainPage()->plots();
        for (int i = 0; i < history->count(); ++i)
            history->item(i)->setCheckState(Qt::Checked);
        // Two graphs (margins, accuracies) for the preference run, none for the SFT one (read on a
        // worker).
        QTRY_COMPARE(plots->preferencePlots()->overlayGraphs(), 2);
        QVERIFY(plots->preferenceShown());
        const tb::PreferenceCurve curve =
            tb::preferenceCurve(tb::readRunMetrics(dir.toStdString()).steps);
        QCOMPARE(curve.steps.size(), 10);
        QVERIFY(qAbs(curve.margins.back() - 1.5) < 1e-9);
        for (int i = 0; i < history->count(); ++i)
            history->item(i)->setCheckState(Qt::Unchecked);
        QTRY_COMPARE(plots->preferencePlots()->overlayGraphs(), 0);
        QVERIFY(!plots->preferenceShown());
    }

    // An ORPO run's SFT term and log odds ratio get their own series on the right axis.
    void orpoSeries()
    {
        tb::MainWindow w;
        tb::PreferencePlots* pref = w.trainPage()->plots()->preferencePlots();
        std::thread job([&] {
            for (int i = 1; i <= 3; ++i) {
                tb::StepMetrics m = step(i, true);
                m.preference = stats(i, true);
                w.controller()->events().onStep(m);
            }
        });
        job.join();
        QTRY_COMPARE(int(pref->series(QStringLiteral("nll_loss")).size()), 3);
        QVERIFY(qAbs(pref->series(QStringLiteral("log_odds_ratio")).back().second - (-0.64)) <
                1e-9);
    }

    // A reward run exports only as a transformers classifier; other runs never offer it.
    void exportChoicesForRewardRun()
    {
        QTemporaryDir runs;
        const QString reward = runs.path() + QStringLiteral("/lora-reward-1");
        const QString dpo = runs.path() + QStringLiteral("/lora-dpo-1");
        writeRunJson(reward, "reward");
        writeRunJson(dpo, "dpo");
        QVERIFY(tb::ExportPage::rewardRun(reward));
        QVERIFY(!tb::ExportPage::rewardRun(dpo));
        QVERIFY(!tb::ExportPage::rewardRun(runs.path() + QStringLiteral("/missing")));

        tb::MainWindow w;
        tb::ExportPage* page = w.exportPage();
        QVERIFY(page);
        QAbstractItemModelTester formats(page->formatBox()->model(),
                                         QAbstractItemModelTester::FailureReportingMode::QtTest);
        w.state()->setRuns({dpo, reward});
        w.state()->setSelectedRun(reward);
        const QStringList others = {QStringLiteral("peft"), QStringLiteral("merged"),
                                    QStringLiteral("gguf"), QStringLiteral("gguf-lora"),
                                    QStringLiteral("gguf-base")};
        auto tooltip = [page](const QString& format) {
            return page->formatBox()
                ->itemData(page->formatBox()->findData(format), Qt::ToolTipRole)
                .toString();
        };
        QVERIFY(page->formatEnabled(QStringLiteral("reward")));
        for (const QString& f : others) {
            QVERIFY2(!page->formatEnabled(f), qPrintable(f));
            QVERIFY(tooltip(f).contains(QStringLiteral("reward model")));  // the reason
        }
        QCOMPARE(page->formatBox()->currentData().toString(), QStringLiteral("reward"));
        QVERIFY(page->formatNote().contains(QStringLiteral("ForSequenceClassification")));
        page->setFormat(QStringLiteral("gguf"));  // not for this run: ignored
        QCOMPARE(page->formatBox()->currentData().toString(), QStringLiteral("reward"));

        w.state()->setSelectedRun(dpo);
        QVERIFY(!page->formatEnabled(QStringLiteral("reward")));
        QVERIFY(!tooltip(QStringLiteral("reward")).isEmpty());
        for (const QString& f : others)
            QVERIFY(page->formatEnabled(f));
        QCOMPARE(page->formatBox()->currentData().toString(), QStringLiteral("peft"));
        QVERIFY(page->formatNote().isEmpty());
        page->setFormat(QStringLiteral("reward"));
        QCOMPARE(page->formatBox()->currentData().toString(), QStringLiteral("peft"));
        page->setFormat(QStringLiteral("gguf"));
        QCOMPARE(page->formatBox()->currentData().toString(), QStringLiteral("gguf"));
    }

    // Best-of-N: only reward-model runs score, N is 2-16, and the ranking is a well-behaved model.
    void bestOfNChoicesAndRanking()
    {
        QTemporaryDir runs;
        const QString reward = runs.path() + QStringLiteral("/lora-reward-1");
        const QString dpo = runs.path() + QStringLiteral("/lora-dpo-1");
        writeRunJson(reward, "reward");
        writeRunJson(dpo, "dpo");
        tb::MainWindow w;
        auto* play = w.playgroundPage();
        QVERIFY(play);
        QCOMPARE(play->rewardRunBox()->count(), 0);
        QVERIFY(!play->bestOfN());  // no reward run to score with
        w.state()->setRuns({dpo, reward});
        QCOMPARE(play->rewardRunBox()->count(), 1);
        QCOMPARE(play->rewardRunBox()->currentData().toString(), reward);
        QCOMPARE(play->bestOfNBox()->minimum(), 2);
        QCOMPARE(play->bestOfNBox()->maximum(), 16);

        tb::RankedAnswersModel* model = play->rankedAnswers();
        QAbstractItemModelTester tester(model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model->setAnswers({{2, "the best answer", 1.25, "eos"}, {0, "a worse one", -0.5, "eos"}});
        QCOMPARE(model->rowCount(), 2);
        QCOMPARE(model->data(model->index(0, 0), Qt::DisplayRole).toInt(), 1);
        QCOMPARE(model->data(model->index(0, 1), Qt::UserRole).toDouble(), 1.25);
        QCOMPARE(model->data(model->index(0, 2), Qt::DisplayRole).toInt(), 3);  // seed + 2
        QCOMPARE(model->data(model->index(1, 3), Qt::DisplayRole).toString(),
                 QStringLiteral("a worse one"));
        model->setAnswers({});
        QCOMPARE(model->rowCount(), 0);
    }
};

QTEST_MAIN(TestPreferenceUi)
#include "test_preference_ui.moc"
