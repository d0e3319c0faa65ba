// The Memory page's stepper for teaching: the comparison bars built up one component at a time
// (weights, then gradients, then optimizer states, then activations, then overhead), each step
// with one sentence saying what it adds and why.
#pragma once

#include <QWidget>

class QLabel;
class QPushButton;

namespace tb {

class MemoryStepper : public QWidget {
    Q_OBJECT
public:
    explicit MemoryStepper(QWidget* parent = nullptr);

    static int stepCount();  // 5: the comparison chart's components
    // Step 1..stepCount(): its title and its sentence.
    static QString stepTitle(int step);
    static QString stepSentence(int step);

    // 0: every component shown (not stepping); 1..stepCount(): the first `stage` components.
    int stage() const { return m_stage; }
    QString text() const;  // what the label shows
    QPushButton* nextButton() const { return m_next; }
    QPushButton* backButton() const { return m_back; }
    QPushButton* allButton() const { return m_all; }

public Q_SLOTS:
    void setStage(int stage);
    void next();  // from "all": starts at weights
    void back();  // from weights: back to "all"
    void showAll();

Q_SIGNALS:
    void stageChanged(int stage);

private:
    int m_stage = 0;
    QPushButton *m_back = nullptr, *m_next = nullptr, *m_all = nullptr;
    QLabel* m_label = nullptr;
};

}  // namespace tb
