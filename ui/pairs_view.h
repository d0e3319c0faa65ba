// PairsView: the Data page's Pairs tab, pairwise review of the store's preference pairs. A table
// of pairs (PairTableModel); the selected pair's prompt and its two answers side by side as A and
// B, as the pair is shown (swaps respected); keys A / B / T / S record the annotator's choice and
// move to the next pair they have not judged, W swaps the sides, E (or a double-click on an
// answer) edits it in place, Ctrl+Z undoes this view's last change through the store's undo.
// Beside it: agreement per annotator pair (percent and Cohen's kappa, from pairChoiceAgreement)
// with the disputed pairs to adjudicate, and the pair import (TRL standard, HH-RLHF,
// UltraFeedback) on the page's worker with every rejected row listed with its line and reason.
// Choices, swaps, edits and adjudications are small transactions written on the GUI thread, as the
// record review keys are.
#pragma once

#include "data_panels.h"

#include "data/curate/agreement.h"
#include "data/pairs.h"

#include <QWidget>

#include <cstdint>
#include <functional>
#include <vector>

class QComboBox;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QTableView;
class QTableWidget;

namespace tb {

class PairTableModel;

class PairsView : public QWidget {
    Q_OBJECT
public:
    explicit PairsView(DataContext context, QWidget* parent = nullptr);

    void setStore(const DataStore* store);  // the page's GUI-thread store (nullptr: none)
    void setAnnotator(const QString& name);
    void refresh();  // the pair ids (worker), then the agreement panel (worker)

    // The annotator's choice on the current pair as shown (a | b | tie | skip), then the next pair
    // they have not judged. False (reason in the page's message) when nothing was recorded.
    bool choose(const QString& choice);
    bool swapCurrent();
    // Starts editing answer `side` (0: A, 1: B) in place; saveEdit writes it with editPairAnswer.
    bool editAnswer(int side);
    bool saveEdit();
    bool cancelEdit();
    bool editChanged() const;  // the answer being edited differs from the stored one
    bool undoLast();           // the newest operation this view made that is not undone yet
    // The adjudicator's final choice (as shown) on the current pair.
    bool adjudicate(const QString& choice);
    // Imports a pair file on the page's worker; the rejected rows fill rejectionTable().
    bool importFile(const QString& path, PairLayout layout);
    void openImport();  // asks for the file

    bool selectPair(qint64 pairId);
    void selectRow(int row);
    qint64 currentPairId() const;
    int editingSide() const { return m_editSide; }  // -1 when not editing

    PairTableModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    QPlainTextEdit* promptView() const { return m_prompt; }
    QPlainTextEdit* answerView(int side) const { return m_answer[side]; }
    QTableWidget* agreementTable() const { return m_agreement; }
    QListWidget* disputedList() const { return m_disputed; }
    QTableWidget* rejectionTable() const { return m_rejections; }
    QLabel* importSummary() const { return m_importSummary; }
    QComboBox* layoutBox() const { return m_layout; }
    const std::vector<PairAgreement>& agreement() const { return m_agreementRows; }
    const std::vector<int64_t>& undoStack() const { return m_undo; }

Q_SIGNALS:
    void agreementRefreshed();
    void imported(qint64 pairs, int rejected);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QWidget* buildReviewArea();
    QWidget* buildSidePanel();
    void buildShortcuts();
    void showCurrent();
    void afterIds();
    void refreshAgreement();
    void showAgreement(const std::vector<PairAgreement>& rows,
                       const std::vector<int64_t>& disputed);
    // Runs one GUI-thread store change on the current pair; records its operation for Ctrl+Z.
    bool
    change(const QString& what,
           const std::function<int64_t(DataStore&, int64_t id, const std::string& who)>& write);
    DataStore* store() const;
    void message(const QString& text) const;

    DataContext m_ctx;
    PairTableModel* m_model = nullptr;
    QTableView* m_table = nullptr;
    QLabel* m_count = nullptr;
    QPlainTextEdit* m_prompt = nullptr;
    QPlainTextEdit* m_answer[2] = {nullptr, nullptr};
    QLabel* m_answerLabel[2] = {nullptr, nullptr};
    QPushButton* m_save = nullptr;
    QPushButton* m_cancelEdit = nullptr;
    QTableWidget* m_agreement = nullptr;
    QListWidget* m_disputed = nullptr;
    QComboBox* m_layout = nullptr;
    QLabel* m_importSummary = nullptr;
    QTableWidget* m_rejections = nullptr;
    std::vector<PairAgreement> m_agreementRows;
    std::vector<int64_t> m_undo;  // this view's operations, oldest first
    int m_editSide = -1;
    int64_t m_editPair = 0;
    bool m_reselecting = false;  // the pair shown before a refresh or a refused move, again
    int64_t m_reselect = 0;      // the pair to select when the ids arrive
    int m_generation = 0;
};

}  // namespace tb
