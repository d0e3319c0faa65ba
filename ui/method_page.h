// The Method page: the training objective (SFT or a preference objective, ObjectivePanel) and the
// method (full, partial, LoRA, adapter or prompt tuning) with their options, and the trainable
// parameters of each method (core's trainableParameterCount) updating as the options change.
#pragma once

#include <QAbstractTableModel>
#include <QWidget>

#include <cstdint>
#include <vector>

class QButtonGroup;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QStackedWidget;
class QTableView;
class QVBoxLayout;

namespace tb {

class ObjectivePanel;
class StudioState;

// Every method's trainable parameters with the current options (rows: full, partial, lora, adapter,
// prompt).
class MethodComparisonModel : public QAbstractTableModel {
    Q_OBJECT
public:
    struct Row {
        QString method;
        qint64 trainable = -1;  // -1: the options do not fit the model (see error)
        double percent = 0;
        QString error;
        bool chosen = false;
    };
    explicit MethodComparisonModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
    void setRows(std::vector<Row> rows);
    const std::vector<Row>& rows() const { return m_rows; }
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::vector<Row> m_rows;
};

class MethodPage : public QWidget {
    Q_OBJECT
public:
    explicit MethodPage(StudioState* state, QWidget* parent = nullptr);

    // Shown numbers (from core): trainable parameters of the chosen method, and their share of the
    // model.
    qint64 trainableParameters() const { return m_trainable; }
    double trainablePercent() const { return m_percent; }
    QString summaryText() const;
    MethodComparisonModel* comparison() const { return m_comparison; }
    void chooseMethod(const QString& name);  // "full", "partial", "lora", "adapter", "prompt"
    QSpinBox* loraRankBox() const { return m_loraRank; }
    QLineEdit* promptInitEdit() const { return m_promptInit; }
    // The objective (SFT, DPO, ...) and its options, with their memory estimate beside SFT's.
    ObjectivePanel* objectivePanel() const { return m_objective; }

private:
    void buildOptions(QStackedWidget* stack);
    void fromState();        // state -> widgets
    void toState();          // widgets -> state
    void showLoraTargets();  // the config's targets (core's defaults when it names none)
    void refreshCounts();
    void rebuildLoraTargets();

    StudioState* m_state;
    bool m_updating = false;
    ObjectivePanel* m_objective = nullptr;
    QButtonGroup* m_methods = nullptr;
    QStackedWidget* m_stack = nullptr;
    // Partial
    QSpinBox* m_blocks = nullptr;
    QCheckBox *m_partialEmbeddings = nullptr, *m_partialHead = nullptr, *m_partialNorms = nullptr;
    // LoRA
    QSpinBox* m_loraRank = nullptr;
    QDoubleSpinBox *m_loraAlpha = nullptr, *m_loraDropout = nullptr;
    QCheckBox* m_rslora = nullptr;
    QVBoxLayout* m_targetsLayout = nullptr;
    std::vector<QCheckBox*> m_targets;
    // Adapter
    QComboBox *m_adapterKind = nullptr, *m_adapterActivation = nullptr;
    QSpinBox *m_adapterSize = nullptr, *m_adapterReduction = nullptr;
    // Prompt
    QSpinBox* m_promptTokens = nullptr;
    QLineEdit* m_promptInit = nullptr;

    QLabel* m_summary = nullptr;
    QLabel* m_error = nullptr;
    QTableView* m_table = nullptr;
    MethodComparisonModel* m_comparison = nullptr;
    qint64 m_trainable = 0;
    double m_percent = 0;
};

}  // namespace tb
