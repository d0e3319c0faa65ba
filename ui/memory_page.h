// The Memory page (the instructor's view): core's memory estimate as stacked bars for the chosen
// setup (beside the same setup with SFT for a preference objective) and every other method, QLoRA
// included, a device-memory line with core's verdict and advice, controls that redraw at once
// (a quantised base among them), and measured bars beside the estimated ones once a run has done
// its first step. A second tab compares every method and precision on one chart with a stepper
// for teaching; a catalog of real configs plans for models not downloaded; a presentation mode
// enlarges every text.
#pragma once

#include "memory_items.h"

#include "memory/estimator.h"
#include "train/job.h"

#include <QFont>
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
class QTabWidget;

namespace tb {

class CatalogChooser;
class ComparisonChart;
class MemoryStepper;
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
    // The frozen base's format (QuantKind as data) and double quantisation: the run's `quant`.
    QComboBox* quantBox() const { return m_quant; }
    QCheckBox* doubleQuantBox() const { return m_doubleQuant; }
    QTabWidget* tabs() const { return m_tabs; }  // 0: this setup, 1: compare methods
    ComparisonChart* comparison() const { return m_compare; }
    MemoryStepper* stepper() const { return m_stepper; }
    CatalogChooser* catalog() const { return m_catalog; }
    // Large fonts for a projector: every text of the page and its charts, 1.8x.
    void setPresentation(bool on);
    bool presentation() const;
    QCheckBox* presentationBox() const { return m_presentation; }
    QFont chartFont() const;  // the "This setup" chart's axis labels' font

    // Device presets: bytes (0 = none); "This machine" is the physical memory of this computer.
    void setDeviceMemory(qint64 bytes);
    void setGpus(int gpus, int zeroStage);

Q_SIGNALS:
    // A catalog model was chosen: its folder, for the Model page to open.
    void modelRequested(const QString& path);

public Q_SLOTS:
    void showMeasured(const tb::MemoryReport& report);
    void clearMeasured();
    void refresh();

private:
    void buildControls(QWidget* box);
    QWidget* buildCompareTab();
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
    QComboBox* m_quant = nullptr;
    QCheckBox* m_doubleQuant = nullptr;
    QCheckBox* m_presentation = nullptr;
    QWidget* m_controls = nullptr;
    QTabWidget* m_tabs = nullptr;
    ComparisonChart* m_compare = nullptr;
    MemoryStepper* m_stepper = nullptr;
    CatalogChooser* m_catalog = nullptr;
    QFont m_baseFont;  // the page's font outside presentation mode
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

}  // namespace tb
