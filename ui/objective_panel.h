// The Method page's objective box: SFT or a preference objective (DPO, IPO, SimPO, ORPO, reward
// model) with the options that apply to it (beta, label smoothing, gamma, reference, pair layout),
// written into StudioState's config, and core's memory estimate for the choice beside SFT's.
#pragma once

#include <QWidget>

#include <cstdint>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;

namespace tb {

class StudioState;

class ObjectivePanel : public QWidget {
    Q_OBJECT
public:
    explicit ObjectivePanel(StudioState* state, QWidget* parent = nullptr);

    // "sft", "dpo", "ipo", "simpo", "orpo", "reward" (objectiveName).
    void chooseObjective(const QString& name);
    QComboBox* objectiveBox() const { return m_objective; }
    QDoubleSpinBox* betaBox() const { return m_beta; }
    QDoubleSpinBox* labelSmoothingBox() const { return m_smoothing; }
    QDoubleSpinBox* gammaBox() const { return m_gamma; }
    QComboBox* referenceBox() const { return m_reference; }
    QComboBox* layoutBox() const { return m_layout; }
    // Whether an option's row is shown for the current objective (tests; the panel may be hidden).
    bool rowShown(const QWidget* field) const;

    // Core's estimated peak for the config, and for the same config with objective sft (bytes; -1
    // while no model is open or the estimate fails).
    qint64 estimateBytes() const { return m_estimate; }
    qint64 sftEstimateBytes() const { return m_sftEstimate; }
    QString memoryText() const;  // what the memory line shows
    // One explanatory sentence per objective (the combo box's tooltips).
    static QString objectiveBlurb(const QString& name);

public Q_SLOTS:
    void refreshMemory();

private:
    void fromState();
    void toState();
    void showRows();

    StudioState* m_state;
    bool m_updating = false;
    QFormLayout* m_form = nullptr;
    QComboBox* m_objective = nullptr;
    QLabel* m_blurb = nullptr;
    QLabel* m_betaLabel = nullptr;
    QDoubleSpinBox *m_beta = nullptr, *m_smoothing = nullptr, *m_gamma = nullptr;
    QComboBox *m_reference = nullptr, *m_layout = nullptr;
    QLabel* m_memory = nullptr;
    qint64 m_estimate = -1, m_sftEstimate = -1;
    QString m_memoryDetail;
};

}  // namespace tb
