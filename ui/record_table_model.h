// RecordTableModel: the dataset store's records as a table. A filter or sort reads only the ordered
// record ids (one query); rows are read lazily in pages of 256 through a small LRU page cache, so
// 100,000 rows scroll, sort and filter without loading them all. (OFFSET pages would re-sort the
// whole table for every page of a non-id order: seconds deep into 100,000 rows sorted by tokens;
// point lookups by id stay ~ms.)
#pragma once

#include "data/store/store.h"

#include <QAbstractTableModel>

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tb {

class RecordTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        ColId,
        ColStatus,
        ColSplit,
        ColKind,
        ColPreview,
        ColTokens,
        ColRating,
        ColSynthetic,
        ColFlags,
        ColumnCount
    };
    static constexpr int kPageRows = 256;
    static constexpr size_t kMaxPages = 16;
    // Qt::UserRole on any column: the record id (qint64).
    static constexpr int IdRole = Qt::UserRole;

    explicit RecordTableModel(QObject* parent = nullptr);

    // Where the ordered ids of a filter or sort come from. Without a loader they are read on the
    // calling thread. With one (the Data page hands the query to a worker with its own connection),
    // the table keeps showing the previous rows until the ids arrive through `deliver` on the GUI
    // thread; a newer request supersedes an older one, whose answer is dropped.
    using IdLoader = std::function<void(const RecordQuery& query,
                                        std::function<void(std::vector<int64_t>)> deliver)>;
    void setIdLoader(IdLoader loader) { m_loader = std::move(loader); }
    // True while a filter, sort or refresh waits for its ids.
    bool loading() const { return m_pending != Pending::None; }

    // The store read on the GUI thread (not owned; nullptr shows nothing). Resets the model.
    void setStore(const DataStore* store);
    const DataStore* store() const { return m_store; }

    // Filter (status, split, contains, flagged only); order and offset/limit are the model's own.
    void setFilter(const RecordQuery& filter);
    const RecordQuery& filter() const { return m_filter; }

    // Reads the count and drops the cache (after an import, dedup, undo...).
    void refresh();
    // Re-reads one record's row in place (after a review or an edit), keeping the row where it is.
    void refreshRecord(int64_t recordId);

    // The record at a row (fetched through the cache); nullptr when out of range or the store is
    // gone.
    const StoredRecord* recordAt(int row) const;
    int64_t idAt(int row) const;
    int rowOf(int64_t recordId) const;  // -1 when the filter leaves it out
    int pageFetches() const { return m_fetches; }

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

    static QString statusText(ReviewStatus status);
    static QColor statusColor(ReviewStatus status);  // invalid for pending
    static QString previewText(const StoredRecord& record, int maxChars = 160);

Q_SIGNALS:
    // The ids of the latest filter, sort or refresh are in place (emitted synchronously without a
    // loader).
    void idsLoaded();

private:
    enum class Pending { None, Reorder, Reset };
    const std::vector<StoredRecord>* page(int64_t index) const;
    RecordQuery idQuery() const;
    // Asks for the ids again; `reset` when the set of rows may change (filter, refresh), else a
    // reorder.
    void requestIds(bool reset);
    void applyIds(std::vector<int64_t> ids, bool reset);
    void dropPages();

    const DataStore* m_store = nullptr;
    RecordQuery m_filter;
    RecordOrder m_order = RecordOrder::Id;
    bool m_descending = false;
    std::vector<int64_t> m_ids;  // the filtered records in display order
    IdLoader m_loader;
    Pending m_pending = Pending::None;
    uint64_t m_generation = 0;  // of the latest id request; older answers are dropped
    // page index -> rows; m_lru front = most recently used page
    mutable std::unordered_map<int64_t, std::vector<StoredRecord>> m_pages;
    mutable std::list<int64_t> m_lru;
    mutable int m_fetches = 0;
};

}  // namespace tb
