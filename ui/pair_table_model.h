// PairTableModel: the dataset store's preference pairs as a table (id, prompt excerpt, the
// annotator's choice as the pair is shown now, what training reads, who judged it, scan flags).
// A refresh reads only the ordered pair ids (on a worker through the loader); rows are read by id
// in pages of 128 through a small LRU page cache, as RecordTableModel does for records.
#pragma once

#include "data/store/pairs_store.h"

#include <QAbstractTableModel>

#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>
#include <vector>

namespace tb {

class DataStore;

class PairTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ColId, ColPrompt, ColStatus, ColVerdict, ColAnnotators, ColFlags, ColumnCount };
    static constexpr int kPageRows = 128;
    static constexpr size_t kMaxPages = 16;
    static constexpr int IdRole = Qt::UserRole;  // any column: the pair id (qint64)

    explicit PairTableModel(QObject* parent = nullptr);

    // Where the ordered ids come from; without a loader they are read on the calling thread. A
    // newer request supersedes an older one, whose answer is dropped.
    using IdLoader = std::function<void(std::function<void(std::vector<int64_t>)> deliver)>;
    void setIdLoader(IdLoader loader) { m_loader = std::move(loader); }
    bool loading() const { return m_pending; }

    void setStore(const DataStore* store);  // read on the GUI thread; not owned; resets
    // Whose choice the Status column shows (and nextUnjudged looks for).
    void setAnnotator(const QString& name);
    const QString& annotator() const { return m_annotator; }

    void refresh();                    // reads the ids again and drops the cache
    void refreshPair(int64_t pairId);  // re-reads one pair's row in place

    const StoredPair* pairAt(int row) const;  // nullptr out of range
    int64_t idAt(int row) const;
    int rowOf(int64_t pairId) const;  // -1 when not listed
    // The first row after `row` (wrapping round, `row` itself last) whose pair the annotator has
    // not judged; -1 when there is none.
    int nextUnjudged(int row) const;
    int pageFetches() const { return m_fetches; }

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    // The annotator's choice on the pair as shown now: "unjudged", "A", "B", "tie" or "skip" (a
    // choice is stored as a verdict on the stored pair, so a later swap moves its letter).
    static QString shownChoice(const StoredPair& pair, const QString& annotator);
    // A verdict (chosen | rejected | tie | skip) as the letter of the side it picks now.
    static QString shownVerdict(const StoredPair& pair, const std::string& verdict);
    static QString promptText(const PairExample& pair);
    // The answer shown as A (side 0) or B (side 1), and which stored answer that is.
    static QString answerText(const StoredPair& pair, int side);
    static std::string storedSide(const StoredPair& pair, int side);  // "chosen" | "rejected"

Q_SIGNALS:
    void idsLoaded();

private:
    const std::vector<StoredPair>* page(int64_t index) const;
    void applyIds(std::vector<int64_t> ids);

    const DataStore* m_store = nullptr;
    QString m_annotator;
    std::vector<int64_t> m_ids;
    IdLoader m_loader;
    bool m_pending = false;
    uint64_t m_generation = 0;
    mutable std::unordered_map<int64_t, std::vector<StoredPair>> m_pages;
    mutable std::list<int64_t> m_lru;
    mutable int m_fetches = 0;
};

}  // namespace tb
