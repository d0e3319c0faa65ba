// The Train page's live plots: loss (train, smoothed, validation, past runs overlaid), the
// generation-based evaluation's metrics (eval.generate_every; past runs overlaid), learning rate
// (planned curve and actual points), memory over time with phase markers, tokens/s and gradient
// norm; below them, for a preference or reward run, its rewards, margins, accuracies and
// log-probabilities (PreferencePlots). Points arrive in batches; every change only marks the plots
// stale, and one deferred pass (queued to the event loop) rescales and replots them all: a drain
// that brings a plan, steps and evals redraws once.
#pragma once

#include "job_event_batch.h"
#include "preference_plots.h"
#include "train/job.h"

#include <QWidget>

#include <map>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QCPItemText;

namespace tb {

// One metric of the generation-based evaluation over a run's steps.
struct MetricCurve {
    QString metric;
    QVector<double> steps, values;
};

struct RunCurve {
    QString name;
    QVector<double> steps, losses;
    std::vector<MetricCurve> generation;  // the run's generation_eval lines, one per metric
    PreferenceCurve preference;           // a preference or reward run's margins and accuracies
};

class TrainPlots : public QWidget {
    Q_OBJECT
public:
    explicit TrainPlots(QWidget* parent = nullptr);

    void clear();
    void setPlannedSchedule(const std::vector<double>& lrPerStep);  // index = 0-based step
    void appendSteps(const std::vector<StepMetrics>& steps);
    void appendEvals(const std::vector<EvalMetrics>& evals);
    // One point per metric at each logged step: 0-1 metrics on the left axis, 0-100 (sacrebleu)
    // metrics and the mean length on the right one.
    void appendGenerationEvals(const std::vector<GenerationEvalMetrics>& evals);
    void appendBatch(const std::vector<StepMetrics>& steps, const std::vector<EvalMetrics>& evals);
    // A launched run's steps of every rank: the memory plot shows one series per rank (tensor
    // memory after the step, made on the rank's first point) instead of the one process's series.
    void appendRankSteps(const std::vector<RankStep>& steps);
    void setOverlays(const std::vector<RunCurve>& runs);
    void setLogScale(bool on);
    void setSmoothing(double factor);  // exponential moving average weight of the past, [0, 1)
    void setMemorySource(const QString& source);  // "cpu-tracked" | "cuda"

    bool exportPng(const QString& dir,
                   QStringList* written = nullptr);  // brings a pending replot forward
    bool exportCsv(const QString& file) const;

    int lossPoints() const;
    std::vector<std::pair<double, double>> lossSeries() const;  // the live run's (step, loss)
    int rankMemoryGraphs() const { return int(m_rankMemory.size()); }
    // A rank's memory series as plotted: (step, MiB).
    std::vector<std::pair<double, double>> rankMemorySeries(int rank) const;
    int valPoints() const;
    int memoryPoints() const;
    int lrPoints() const;
    int plannedPoints() const;
    int generationEvalPoints() const;  // over all metrics of the live run
    // The live run's points of one metric (step, score), as plotted.
    std::vector<std::pair<double, double>> generationEvalSeries(const QString& metric) const;
    QCustomPlot* generationPlot() const { return m_generation; }
    int generationGraphs() const;         // live and overlaid
    QString generationRightAxis() const;  // its label; empty while hidden
    int replots() const
    {
        return m_replots;
    }  // rescale-and-replot passes so far (tests count them)
    bool replotPending() const { return m_replotPending; }
    QList<QCustomPlot*> plots() const { return {m_loss, m_generation, m_lr, m_memory, m_speed}; }
    // The preference plots: shown (not hidden) once the live run or an overlaid one has their
    // statistics.
    PreferencePlots* preferencePlots() const { return m_preference; }
    bool preferenceShown() const { return !m_preference->isHidden(); }

private:
    void scheduleReplot();  // at most one pending pass
    void replotAll();
    void recomputeSmoothing();
    QCPGraph* generationGraph(const QString& metric);  // made on the first point of a metric
    void updateGenerationAxes();
    void showGenerationHint();        // the hint while the plot has no point
    void showProcessMemory(bool on);  // the single process's memory series, or the ranks'

    QCustomPlot *m_loss = nullptr, *m_generation = nullptr, *m_lr = nullptr, *m_memory = nullptr,
                *m_speed = nullptr;
    QCPGraph *m_lossRaw = nullptr, *m_lossSmooth = nullptr, *m_lossVal = nullptr;
    QCPGraph *m_lrPlanned = nullptr, *m_lrActual = nullptr;
    QCPGraph *m_memCurrent = nullptr, *m_memPeak = nullptr, *m_memForward = nullptr,
             *m_memBackward = nullptr, *m_memOptimizer = nullptr, *m_memReserved = nullptr;
    QCPGraph *m_tokens = nullptr, *m_gradNorm = nullptr;
    std::vector<QCPGraph*> m_overlays;                // on the loss and generation plots
    std::map<QString, QCPGraph*> m_generationGraphs;  // the live run's, by metric
    std::map<int, QCPGraph*> m_rankMemory;            // a launched run's, by rank
    bool m_cudaMemory = false;                        // setMemorySource("cuda")
    QCPItemText* m_generationHint = nullptr;
    PreferencePlots* m_preference = nullptr;
    std::vector<StepMetrics> m_steps;
    std::vector<EvalMetrics> m_evals;
    double m_smoothing = 0.8;
    double m_ema = 0;
    int m_replots = 0;
    bool m_replotPending = false;
};

}  // namespace tb
