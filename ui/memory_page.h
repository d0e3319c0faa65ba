// The Memory page (the instructor's view): core's memory estimate as stacked bars for the chosen
// setup (beside the same setup with SFT for a preference objective) and every other method, a
// device-memory line with core's verdict and advice, controls that redraw at once, and measured
// bars beside the estimated ones once a run has done its first step.
#pragma once

#include "memory/estimator.h"
#include "train/job.h"

#include <QWidget>

#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QCPBars;
class QCPItemStraightLine;
class QCPItemText;
class QCustomPlot;
class QLabel;
class QSlider;
class QSpinBox;
class QTableWidget;

namespace tb {

class StudioState;

class MemoryPage : public QWidget {
    Q_OBJECT
public:
    explicit MemoryPage(StudioState* state, QWidget* parent = nullptr);

    // What the page shows: the options it passed to core and core's estimate for the chosen method.
    const EstimateOptions& estimateOptions() const { return m_options; }
    const std::optional<MemoryEstimate>& estimate() const { return m_estimate; }
    QString verdictText() const;
    QStringList adviceShown() const;
    // Bytes drawn for one component (weights ... overhead; "other": the items core adds beyond
    // them, such as a preference objective's reference) in category `column` (0: the chosen
    // method; a preference objective's SFT comparison is column 1).
    double barBytes(const QString& key, int column) const;
    QStringList categories() const { return m_categories; }
    QTableWidget* table() const { return m_table; }
    QCustomPlot* plot() const { return m_plot; }
    QSlider* batchSlider() const { return m_batch; }  // log2 of the micro-batch

    // Device presets: bytes (0 = none); "This machine" is the physical memory of this computer.
    void setDeviceMemory(qint64 bytes);
    void setGpus(int gpus, int zeroStage);

public Q_SLOTS:
    void showMeasured(const tb::MemoryReport& report);
    void clearMeasured();
    void refresh();

private:
    void buildControls(QWidget* box);
    void fromState();
    // inferenceBytes: generation with the same model (a dotted reference line); 0 draws none.
    void drawChart(const std::vector<std::pair<QString, std::vector<double>>>& columns,
                   double deviceBytes, double inferenceBytes);

    StudioState* m_state;
    bool m_updating = false;
    QSlider *m_batch = nullptr, *m_seq = nullptr, *m_rank = nullptr;
    QLabel *m_batchValue = nullptr, *m_seqValue = nullptr, *m_rankValue = nullptr;
    QComboBox* m_precision = nullptr;
    QCheckBox* m_checkpointing = nullptr;
    QCheckBox* m_chunkedLoss = nullptr;
    QSpinBox* m_gpus = nullptr;
    QComboBox* m_zero = nullptr;
    QComboBox* m_device = nullptr;
    QCustomPlot* m_plot = nullptr;
    std::vector<QCPBars*> m_bars;  // one per component, stacked
    QCPItemStraightLine* m_deviceLine = nullptr;
    QCPItemText* m_deviceLabel = nullptr;
    QCPItemStraightLine* m_inferenceLine = nullptr;
    QCPItemText* m_inferenceLabel = nullptr;
    QLabel* m_verdict = nullptr;
    QLabel* m_advice = nullptr;
    QTableWidget* m_table = nullptr;
    QStringList m_categories;
    double m_scale = 1;  // bytes per plotted unit

    EstimateOptions m_options;
    std::optional<MemoryEstimate> m_estimate;
    std::optional<qint64> m_sftTotal;  // a preference objective: the same setup with SFT
    std::optional<MemoryReport> m_measured;
};

// "8 GB" ... "141 GB" device presets and this machine's physical memory, bytes.
std::vector<std::pair<QString, qint64>> deviceMemoryPresets();

}  // namespace tb
