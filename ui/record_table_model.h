// RecordTableModel: the dataset store's records as a table. A filter or sort reads only the ordered record
// ids (one query); rows are read lazily in pages of 256 through a small LRU page cache, so 100,000 rows
// scroll, sort and filter without loading them all. (OFFSET pages would re-sort the whole table for every
// page of a non-id order: seconds deep into 100,000 rows sorted by tokens; point lookups by id stay ~ms.)
#pragma once

#include "data/store.h"

#include <QAbstractTableModel>

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tb {

class RecordTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ColId, ColStatus, ColSplit, ColKind, ColPreview, ColTokens, ColRating, ColSynthetic, ColFlags,
                  ColumnCount };
    static constexpr int kPageRows = 256;
    static constexpr size_t kMaxPages = 16;
    // Qt::UserRole on any column: the record id (qint64).
    static constexpr int IdRole = Qt::UserRole;

    explicit RecordTableModel(QObject* parent = nullptr);

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

    // The record at a row (fetched through the cache); nullptr when out of range or the store is gone.
    const StoredRecord* recordAt(int row) const;
    int64_t idAt(int row) const;
    int rowOf(int64_t recordId) const;  // -1 when the filter leaves it out
    int pageFetches() const { return m_fetches; }

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

    static QString statusText(ReviewStatus status);
    static QColor statusColor(ReviewStatus status);  // invalid for pending
    static QString previewText(const StoredRecord& record, int maxChars = 160);

private:
    const std::vector<StoredRecord>* page(int64_t index) const;
    void invalidate();

    const DataStore* m_store = nullptr;
    RecordQuery m_filter;
    RecordOrder m_order = RecordOrder::Id;
    bool m_descending = false;
    std::vector<int64_t> m_ids;  // the filtered records in display order
    // page index -> rows; m_lru front = most recently used page
    mutable std::unordered_map<int64_t, std::vector<StoredRecord>> m_pages;
    mutable std::list<int64_t> m_lru;
    mutable int m_fetches = 0;
};

} // namespace tb
