// The Data page's side panel tabs: Review (agreement per annotator pair, adjudication queue),
// Curation (dedup clusters, leak/PII scan, chunking, each with apply and undo), Statistics
// (token-length histogram with the max-length cutoff and the truncated count) and History
// (operations with undo). All numbers come from core (data/curate.h, data/review.h) computed on
// worker threads.
#pragma once

#include "data/curate/curate.h"
#include "data/curate/review.h"

#include <QWidget>

#include <functional>
#include <optional>

class QCustomPlot;
class QCPBars;
class QCPItemStraightLine;
class QCPItemText;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QStandardItemModel;
class QTreeView;

namespace tb {

class DataJobs;
class DataStore;

// What a panel needs from the page: the GUI-thread store, the job runner, the annotator, the model
// folder.
struct DataContext {
    std::function<DataStore*()> store;  // nullptr when none is open
    DataJobs* jobs = nullptr;
    std::function<QString(bool ask)> who;  // the annotator ("" when ask is false and none is set)
    std::function<QString()> modelDir;     // tokenizer for statistics and chunking
    std::function<QString()>
        chatTemplate;               // the run's template for statistics ("auto": the model's)
    std::function<void()> changed;  // records changed: refresh the table and the panels
    std::function<void(qint64)> showRecord;       // open a record in the detail editor
    std::function<void(const QString&)> message;  // status line
};

class ReviewPanel : public QWidget {
    Q_OBJECT
public:
    ReviewPanel(DataContext context, QWidget* parent = nullptr);
    void refresh();  // reads agreement and the queue on a worker
    QTableWidget* agreementTable() const { return m_agreement; }
    QListWidget* queue() const { return m_queue; }
    bool adjudicateSelected(const QString& decision);  // accept | reject, as the annotator

Q_SIGNALS:
    void refreshed();

private:
    DataContext m_ctx;
    QTableWidget* m_agreement = nullptr;
    QLabel* m_queueLabel = nullptr;
    QListWidget* m_queue = nullptr;
    int m_generation = 0;
};

class CurationPanel : public QWidget {
    Q_OBJECT
public:
    CurationPanel(DataContext context, QWidget* parent = nullptr);
    bool findDuplicates();  // preview: clusters, nothing removed
    bool applyDedup();      // removes the duplicates as one operation
    bool undoDedup();
    bool scan();
    bool previewChunks();
    bool applyChunks();
    bool undoChunks();
    void setNearThreshold(double threshold);  // 0: exact duplicates only
    // Forgets the results and operations of the store shown before (another store opened).
    void clear();
    void setChunkOptions(int maxTokens, int overlapTokens);
    QString chunkSummary() const;
    qint64 chunkOperation() const { return m_chunkOp; }
    const std::optional<DedupReport>& dedupReport() const { return m_dedup; }
    qint64 dedupOperation() const { return m_dedupOp; }
    const std::optional<ScanReport>& scanReport() const { return m_scan; }
    QTreeView* clusterTree() const { return m_clusterView; }
    QStandardItemModel* clusterModel() const
    {
        return m_clusters;
    }  // cluster rows; their records as children
    QTableWidget* scanTable() const { return m_flags; }

private:
    std::optional<double> nearThreshold() const;
    void showDedup(const DedupReport& report, const std::vector<std::vector<QString>>& previews);
    void updateButtons();

    DataContext m_ctx;
    QDoubleSpinBox* m_near = nullptr;
    QLabel* m_dedupSummary = nullptr;
    QStandardItemModel* m_clusters = nullptr;
    QTreeView* m_clusterView = nullptr;
    QPushButton *m_find = nullptr, *m_apply = nullptr, *m_undo = nullptr;
    QLabel* m_scanSummary = nullptr;
    QTableWidget* m_flags = nullptr;
    QSpinBox *m_chunkMax = nullptr, *m_chunkOverlap = nullptr;
    QLabel* m_chunkSummary = nullptr;
    QPushButton *m_chunkApply = nullptr, *m_chunkUndo = nullptr;
    std::optional<DedupReport> m_dedup;
    std::optional<ScanReport> m_scan;
    qint64 m_dedupOp = 0, m_chunkOp = 0;
    bool m_chunkPreviewed = false;
};

class StatsPanel : public QWidget {
    Q_OBJECT
public:
    StatsPanel(DataContext context, QWidget* parent = nullptr);
    bool compute();  // token counts with the model's tokenizer (stored, reused) and the histogram
    void clear();    // another store opened: its numbers are not this one's
    // The store's records changed (a job, an import, an edit): the next max length counts the
    // store again instead of recounting the report's lengths.
    void markStale();
    bool stale() const { return m_stale; }
    void setMaxLength(int tokens);
    int maxLength() const;
    const std::optional<TokenStatsReport>& report() const { return m_report; }
    std::optional<double> cutoffLineAt() const;  // x of the max-length line when shown
    int histogramBins() const;
    QString truncatedText() const;
    QCustomPlot* plot() const { return m_plot; }

Q_SIGNALS:
    void maxLengthChanged(int tokens);

private:
    void showReport();

    DataContext m_ctx;
    QSpinBox* m_maxLength = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_truncated = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPBars* m_bars = nullptr;
    QCPItemStraightLine* m_cutoff = nullptr;
    QCPItemText* m_cutoffLabel = nullptr;
    std::optional<TokenStatsReport> m_report;
    QString m_reportModel, m_reportTemplate;  // what m_report was counted with
    bool m_stale = false;
    // Set while the report's own job finishes (its refreshes are not changes), until the event
    // loop turns.
    bool m_settling = false;
};

class HistoryPanel : public QWidget {
    Q_OBJECT
public:
    HistoryPanel(DataContext context, QWidget* parent = nullptr);
    void refresh();
    bool undoSelected();
    QTableWidget* table() const { return m_table; }

Q_SIGNALS:
    void refreshed();

private:
    DataContext m_ctx;
    QTableWidget* m_table = nullptr;
    int m_generation = 0;
};

}  // namespace tb
