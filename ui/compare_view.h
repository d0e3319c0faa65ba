// CompareView: blind comparison of two answers to one prompt. The annotator sees "Answer A" and
// "Answer B" (never their sources, in the set's seeded order), picks with 1 / 2 / 3 (or the
// buttons) and an optional note, and moves on to the next item they have not judged. The Summary
// tab opens once they have judged the whole set: win rate with its 95% interval, Cohen's kappa per
// annotator pair and each prompt's verdicts. A verdict is one small transaction written on the GUI
// thread, as the Data page's review keys are.
#pragma once

#include "data/store/comparisons.h"

#include <QWidget>

#include <optional>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
class QTableWidget;

namespace tb {

class DataStore;

class CompareView : public QWidget {
    Q_OBJECT
public:
    explicit CompareView(QWidget* parent = nullptr);

    // The store to read and write (not owned; used on the GUI thread); nullptr for none. Lists its
    // comparison sets and shows the first.
    void setStore(DataStore* store);
    void setSet(const QString& name);
    QString set() const;
    void setAnnotator(const QString& name);
    QString annotator() const;
    // Re-reads the sets, the progress and the next item (after another connection wrote).
    void refresh();

    // The annotator's verdict on the shown item: "a", "b" or "tie", with the note; then the next
    // unjudged item. False (and the reason in message()) when nothing was recorded.
    bool judge(const QString& choice);
    // Shows the item judged before the current one again; judging it replaces the verdict.
    bool back();
    qint64 currentItemId() const { return m_item ? m_item->id : 0; }
    QString message() const;

    QTabWidget* tabs() const { return m_tabs; }
    QComboBox* setBox() const { return m_sets; }
    QLineEdit* annotatorEdit() const { return m_annotator; }
    QLineEdit* noteEdit() const { return m_note; }
    QPlainTextEdit* promptView() const { return m_prompt; }
    QPlainTextEdit* answerAView() const { return m_answerA; }
    QPlainTextEdit* answerBView() const { return m_answerB; }
    QLabel* progressLabel() const { return m_progress; }
    QLabel* summaryLabel() const { return m_summary; }
    QTableWidget* verdictTable() const { return m_verdicts; }

Q_SIGNALS:
    void judged(qint64 itemId, const QString& choice);

private:
    QWidget* buildJudgeTab();
    QWidget* buildSummaryTab();
    void showItem(const std::optional<BlindItem>& item);
    void showNext();
    void updateProgress();
    void updateSummary();
    void setMessage(const QString& text, bool error = false);

    DataStore* m_store = nullptr;
    std::optional<BlindItem> m_item;
    std::vector<qint64> m_judged;  // this session's judged items, for back()
    QTabWidget* m_tabs = nullptr;
    QComboBox* m_sets = nullptr;
    QLineEdit* m_annotator = nullptr;
    QLabel* m_progress = nullptr;
    QPlainTextEdit* m_prompt = nullptr;
    QPlainTextEdit* m_answerA = nullptr;
    QPlainTextEdit* m_answerB = nullptr;
    QLabel* m_previous = nullptr;  // the annotator's verdict on a revisited item
    QLineEdit* m_note = nullptr;
    QPushButton* m_pickA = nullptr;
    QPushButton* m_pickB = nullptr;
    QPushButton* m_tie = nullptr;
    QPushButton* m_back = nullptr;
    QLabel* m_message = nullptr;
    QLabel* m_summary = nullptr;
    QTableWidget* m_verdicts = nullptr;
};

}  // namespace tb
