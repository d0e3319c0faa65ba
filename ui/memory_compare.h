// The Memory page's comparison view: every method and precision for the chosen model on one chart
// (full fp32 and bf16, partial, LoRA bf16, QLoRA nf4, bottleneck adapter, prompt tuning), each bar
// stacked by component, with the device line, a stage for the stepper (the first components only),
// the widget's font on every text (the page's presentation mode enlarges it) and export as PNG and
// SVG.
#pragma once

#include "memory/estimator.h"
#include "train/train_config.h"

#include <QString>
#include <QWidget>

#include <array>
#include <vector>

class QCPBars;
class QCPItemStraightLine;
class QCPItemText;
class QCustomPlot;

namespace tb {

// The components a comparison bar stacks, bottom to top. Core's items fold in: master weights into
// optimizer states; logits and a preference objective's log-probabilities into activations; a
// reference copy and a reward head into weights.
enum class TeachingComponent { Weights, Gradients, OptimizerStates, Activations, Overhead };
constexpr int kTeachingComponents = 5;
QString teachingComponentTitle(int component);  // "Weights", ..., "Activations + logits", ...
int teachingComponentOf(const std::string& itemKey);

// One setup of the comparison: its label, a stable key, and the run it estimates.
struct ComparisonSetup {
    QString key;    // full-fp32, full-bf16, partial, lora-bf16, qlora-nf4, adapter, prompt
    QString label;  // "Full\nfp32"
    TrainConfig run;
};
// The seven setups for `run`: its micro-batch, sequence, data and optimizer everywhere; full in
// fp32 and in bf16 (Tunebench's bf16-mixed: fp32 weights, 16-bit compute), LoRA in bf16, QLoRA as
// LoRA on an NF4 base with double quantisation in bf16; partial, adapter and prompt tuning in the
// run's own precision (their options from the run).
std::vector<ComparisonSetup> comparisonSetups(const TrainConfig& run);

struct ComparisonBar {
    QString key, label;
    std::array<qint64, kTeachingComponents> bytes{};  // bytes per device, per component
    qint64 total = 0;  // core's estimated peak (the bar stacks every item; the peak is <= that)
    QString error;     // why core refused the setup (the bar is then empty)
};
// Core's estimate of each setup (advice off), with `base`'s GPUs, ZeRO stage, device memory and
// overhead rule. Pure arithmetic: well under a millisecond a setup, so the GUI thread calls it.
std::vector<ComparisonBar> compareSetups(const ModelConfig& model, const TrainConfig& run,
                                         const EstimateOptions& base);

class ComparisonChart : public QWidget {
    Q_OBJECT
public:
    explicit ComparisonChart(QWidget* parent = nullptr);

    // deviceBytes 0: no device line.
    void setBars(const std::vector<ComparisonBar>& bars, qint64 deviceBytes,
                 const QString& deviceName);
    const std::vector<ComparisonBar>& bars() const { return m_bars; }
    // 0: every component; 1..kTeachingComponents: only the first `stage` (the stepper's).
    void setStage(int stage);
    int stage() const { return m_stage; }

    // Bytes drawn for bar `bar`'s component (0 when the stage hides it or the bar has none).
    double drawnBytes(int bar, int component) const;
    int segmentsDrawn() const;  // bar segments on the chart (one per bar and shown component > 0)
    bool deviceLineShown() const;
    QFont textFont() const;  // the plot's tick labels' font (presentation mode enlarges it)
    QCustomPlot* plot() const { return m_plot; }

    // The chart as it shows now, width x height pixels (PNG) or units (SVG); false when the file
    // could not be written.
    bool exportPng(const QString& path, int width = 1200, int height = 700);
    bool exportSvg(const QString& path, int width = 1200, int height = 700);

protected:
    void changeEvent(QEvent* event) override;  // a new font: every text of the plot follows

private:
    void redraw();

    QCustomPlot* m_plot = nullptr;
    std::vector<QCPBars*> m_layers;  // one per component, stacked
    std::vector<QCPItemText*> m_totals;
    QCPItemStraightLine* m_deviceLine = nullptr;
    QCPItemText* m_deviceLabel = nullptr;
    std::vector<ComparisonBar> m_bars;
    qint64 m_device = 0;
    QString m_deviceName;
    int m_stage = 0;
    double m_scale = 1;  // bytes per plotted unit
};

}  // namespace tb
