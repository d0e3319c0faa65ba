// The Data page: the project's dataset store as a lazily read table with filters, a detail editor,
// the annotator's keyboard flow (A accept, R reject, E edit, 1-5 rate, J/K next/previous), and side
// tabs for review agreement, curation, token statistics and history; a Pairs tab reviews the
// store's preference pairs (PairsView). Long work runs on workers
// (DataJobs).
#pragma once

#include "data/store/store.h"

#include <QWidget>

#include <memory>
#include <optional>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableView;
class QTimer;
class QToolButton;

namespace tb {

class CurationPanel;
class DataJobs;
class HistoryPanel;
class PairsView;
class RecordEditor;
class RecordTableModel;
class ReviewPanel;
class StatsPanel;
class StudioState;
struct SynthRequest;

class DataPage : public QWidget {
    Q_OBJECT
public:
    explicit DataPage(StudioState* state = nullptr, QWidget* parent = nullptr);
    ~DataPage() override;

    // Opens (or with create, creates) a store on a worker: opening runs the schema's migrations,
    // which rewrite whole tables of an older store. storeOpened(path) or storeFailed(error) follows
    // and the page shows the store; a newer openStore supersedes one still opening. False, with the
    // reason in *error, only for what is known at once (no path; no such file without create).
    bool openStore(const QString& path, bool create = false, QString* error = nullptr);
    bool opening() const { return m_openRequest != m_openShown; }
    // Opens the store at `path`, first creating it from datasets/tiny (train.jsonl as train,
    // val.jsonl as validation) on a worker when it does not exist; storeOpened follows. Empty path:
    // the default location.
    void openBundledStore(const QString& path = QString());
    static QString defaultStorePath();  // <app data>/tiny.tbstore
    DataStore* store() const { return m_store.get(); }

    // The annotator's name, set once and remembered (QSettings "data/annotator").
    QString annotator() const { return m_annotator; }
    void setAnnotator(const QString& name);

    // The annotator's actions on the current record (as the shortcuts do); false when nothing
    // happened.
    bool reviewCurrent(const QString& decision, std::optional<int> rating = std::nullopt);
    bool moveCurrent(int delta);  // J: +1, K: -1
    bool saveEdits();
    // Typed and not saved: a record's fields in the editor or a pair's answer being edited.
    bool hasUnsavedEdits() const;
    // Saves both; false when one cannot be saved now (the reason shown, the text kept as typed).
    bool saveAllEdits();
    void discardEdits();  // Revert in the record editor, Esc in the pair's answer
    qint64 currentRecordId() const;
    // Shows record `id` in the editor (another page asks: the Evaluate page's store cases).
    void showRecord(qint64 id) { showRecordById(id); }
    void selectRow(int row);
    void setAdvanceAfterDecision(bool on);

    void setStatusFilter(std::optional<ReviewStatus> status);
    void setSearchText(
        const QString& text);  // applied at once (the search box waits for typing to pause)
    void openImportDialog();
    bool undoLastOperation();
    bool snapshot(const QString& split, bool acceptedOnly);
    // Synthetic examples with the run's model on a worker (the Generate… dialog fills the request).
    bool generateSynthetic(const SynthRequest& request);
    void openSynthDialog();

    RecordTableModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    RecordEditor* editor() const { return m_editor; }
    DataJobs* jobs() const { return m_jobs; }
    ReviewPanel* reviewPanel() const { return m_review; }
    CurationPanel* curationPanel() const { return m_curation; }
    StatsPanel* statsPanel() const { return m_stats; }
    HistoryPanel* historyPanel() const { return m_history; }
    PairsView* pairsView() const { return m_pairs; }
    QTabWidget* views() const { return m_views; }  // Records | Pairs
    QTabWidget* sideTabs() const { return m_tabs; }
    QString message() const;

Q_SIGNALS:
    void storeOpened(const QString& path);
    void storeFailed(const QString& error);
    void recordReviewed(qint64 recordId);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void buildToolbar();
    void buildFilterBar();
    void buildShortcuts();
    void applyFilter();
    void showCurrent();
    void showRecordById(qint64 id);
    void refreshAll();
    void refreshVisiblePanel();
    void setMessage(const QString& text, bool error = false);
    QString ensureAnnotator(bool ask);
    QString modelDir() const;
    void updateCount();
    // Once the table's ids arrive: select the record `id` when still listed, else row `row`
    // (clamped).
    void afterIds();
    void showStore(std::unique_ptr<DataStore> store, const QString& path);

    StudioState* m_state = nullptr;
    std::unique_ptr<DataStore> m_store;
    DataJobs* m_jobs = nullptr;
    RecordTableModel* m_model = nullptr;
    QTableView* m_table = nullptr;
    RecordEditor* m_editor = nullptr;
    QTabWidget* m_tabs = nullptr;
    ReviewPanel* m_review = nullptr;
    CurationPanel* m_curation = nullptr;
    StatsPanel* m_stats = nullptr;
    HistoryPanel* m_history = nullptr;
    QTabWidget* m_views = nullptr;
    QWidget* m_records = nullptr;  // the Records tab: the record shortcuts work inside it
    PairsView* m_pairs = nullptr;
    QWidget* m_toolbar = nullptr;
    QLabel* m_storeLabel = nullptr;
    QPushButton* m_annotatorButton = nullptr;
    QComboBox* m_statusFilter = nullptr;
    QComboBox* m_splitFilter = nullptr;
    QLineEdit* m_search = nullptr;
    QCheckBox* m_flagged = nullptr;
    QCheckBox* m_advance = nullptr;
    QLabel* m_count = nullptr;
    QLabel* m_message = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    QTimer* m_searchDelay = nullptr;
    QTimer* m_panelDelay = nullptr;
    QString m_annotator;
    bool m_triedDefault = false;
    quint64 m_openRequest = 0;  // the newest openStore; its result alone is shown
    quint64 m_openShown = 0;    // the newest openStore whose result came back
    QString m_openingPath;
    quint64 m_bundledIfFails = 0;  // the first visit's open of the last store: else the example
    struct Reselect {
        qint64 id = 0;
        int row = 0;
    };
    std::optional<Reselect> m_reselect;  // what to select when the table's ids arrive
};

}  // namespace tb
