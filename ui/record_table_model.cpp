// RecordTableModel: ordered ids from DataStore::recordIds, rows from DataStore::record page by
// page.
#include "record_table_model.h"

#include <QColor>
#include <QFont>
#include <QLocale>
#include <QPointer>

#include <algorithm>
#include <exception>

namespace tb {

namespace {

std::optional<RecordOrder> orderOf(int column)
{
    switch (column) {
    case RecordTableModel::ColId:
        return RecordOrder::Id;
    case RecordTableModel::ColStatus:
        return RecordOrder::Status;
    case RecordTableModel::ColSplit:
        return RecordOrder::Split;
    case RecordTableModel::ColKind:
        return RecordOrder::Kind;
    case RecordTableModel::ColTokens:
        return RecordOrder::TokenCount;
    case RecordTableModel::ColSynthetic:
        return RecordOrder::Synthetic;
    default:
        return std::nullopt;
    }
}

}  // namespace

RecordTableModel::RecordTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RecordTableModel::setStore(const DataStore* store)
{
    beginResetModel();
    m_store = store;
    m_ids.clear();  // another store's ids mean nothing here: empty until this one's arrive
    dropPages();
    endResetModel();
    requestIds(true);
}

void RecordTableModel::setFilter(const RecordQuery& filter)
{
    m_filter = filter;
    requestIds(true);
}

void RecordTableModel::refresh()
{
    requestIds(true);
}

void RecordTableModel::dropPages()
{
    m_pages.clear();
    m_lru.clear();
}

RecordQuery RecordTableModel::idQuery() const
{
    RecordQuery q = m_filter;
    q.order = m_order;
    q.descending = m_descending;
    q.offset = 0;
    q.limit = -1;
    return q;
}

void RecordTableModel::requestIds(bool reset)
{
    // A reorder requested while a reset is still on its way must apply as a reset: the rows may
    // differ.
    const bool asReset = reset || m_pending == Pending::Reset;
    const uint64_t generation = ++m_generation;
    if (!m_store) {
        m_pending = Pending::None;
        applyIds({}, true);
        return;
    }
    if (!m_loader) {
        std::vector<int64_t> ids;
        try {
            ids = m_store->recordIds(idQuery());
        } catch (const std::exception&) {
            ids.clear();  // an unreadable store shows as empty; the page reports the error when it
                          // opens it
        }
        m_pending = Pending::None;
        applyIds(std::move(ids), asReset);
        return;
    }
    m_pending = asReset ? Pending::Reset : Pending::Reorder;
    QPointer<RecordTableModel> self(this);
    m_loader(idQuery(), [self, generation, asReset](std::vector<int64_t> ids) {
        if (!self || generation != self->m_generation)
            return;  // superseded, or the model is gone
        self->m_pending = Pending::None;
        self->applyIds(std::move(ids), asReset);
    });
}

void RecordTableModel::applyIds(std::vector<int64_t> ids, bool reset)
{
    if (ids.size() > size_t(INT32_MAX))
        ids.resize(size_t(INT32_MAX));
    if (reset || ids.size() != m_ids.size()) {
        beginResetModel();
        m_ids = std::move(ids);
        dropPages();
        endResetModel();
        Q_EMIT idsLoaded();
        return;
    }
    // The same records in a new order: anything holding an index (the selection) follows its
    // record.
    Q_EMIT layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
    const QModelIndexList before = persistentIndexList();
    std::vector<int64_t> idsBefore;
    for (const QModelIndex& i : before)
        idsBefore.push_back(idAt(i.row()));
    m_ids = std::move(ids);
    dropPages();
    QModelIndexList after;
    if (!before.isEmpty()) {
        std::unordered_map<int64_t, int> rowOfId;
        rowOfId.reserve(m_ids.size());
        for (size_t row = 0; row < m_ids.size(); ++row)
            rowOfId.emplace(m_ids[row], int(row));
        for (qsizetype k = 0; k < before.size(); ++k) {
            const auto it = rowOfId.find(idsBefore[size_t(k)]);
            after << (it == rowOfId.end() ? QModelIndex() : index(it->second, before[k].column()));
        }
    }
    changePersistentIndexList(before, after);
    Q_EMIT layoutChanged({}, QAbstractItemModel::VerticalSortHint);
    Q_EMIT idsLoaded();
}

void RecordTableModel::refreshRecord(int64_t recordId)
{
    if (!m_store)
        return;
    for (auto& [index, rows] : m_pages)
        for (size_t i = 0; i < rows.size(); ++i)
            if (rows[i].id == recordId) {
                try {
                    rows[i] = m_store->record(recordId);
                } catch (const std::exception&) {
                    continue;
                }
                const int row = int(index * kPageRows + int64_t(i));
                Q_EMIT dataChanged(this->index(row, 0), this->index(row, ColumnCount - 1));
            }
}

const std::vector<StoredRecord>* RecordTableModel::page(int64_t index) const
{
    if (!m_store)
        return nullptr;
    auto it = m_pages.find(index);
    if (it != m_pages.end()) {
        m_lru.remove(index);
        m_lru.push_front(index);
        return &it->second;
    }
    std::vector<StoredRecord> rows;
    const size_t begin = size_t(index) * kPageRows, end = std::min(m_ids.size(), begin + kPageRows);
    rows.reserve(end - begin);
    for (size_t i = begin; i < end; ++i) {
        try {
            rows.push_back(m_store->record(m_ids[i]));
        } catch (const std::exception&) {
            StoredRecord
                gone;  // deleted underneath us (never by Tunebench, which only marks removal)
            gone.id = m_ids[i];
            gone.removed = true;
            rows.push_back(std::move(gone));
        }
    }
    ++m_fetches;
    if (m_pages.size() >= kMaxPages) {
        m_pages.erase(m_lru.back());
        m_lru.pop_back();
    }
    m_lru.push_front(index);
    return &(m_pages[index] = std::move(rows));
}

const StoredRecord* RecordTableModel::recordAt(int row) const
{
    if (row < 0 || row >= int(m_ids.size()))
        return nullptr;
    const auto* rows = page(row / kPageRows);
    const size_t i = size_t(row % kPageRows);
    return rows && i < rows->size() ? &(*rows)[i] : nullptr;
}

int64_t RecordTableModel::idAt(int row) const
{
    return row >= 0 && row < int(m_ids.size()) ? m_ids[size_t(row)] : 0;
}

int RecordTableModel::rowOf(int64_t recordId) const
{
    const auto it = std::find(m_ids.begin(), m_ids.end(), recordId);
    return it == m_ids.end() ? -1 : int(it - m_ids.begin());
}

int RecordTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_ids.size());
}

int RecordTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString RecordTableModel::statusText(ReviewStatus status)
{
    switch (status) {
    case ReviewStatus::Pending:
        return tr("pending");
    case ReviewStatus::Accepted:
        return tr("accepted");
    case ReviewStatus::Rejected:
        return tr("rejected");
    case ReviewStatus::NeedsAdjudication:
        return tr("adjudicate");
    }
    return {};
}

QColor RecordTableModel::statusColor(ReviewStatus status)
{
    switch (status) {
    case ReviewStatus::Accepted:
        return QColor(0x27, 0xae, 0x60);
    case ReviewStatus::Rejected:
        return QColor(0xc0, 0x39, 0x2b);
    case ReviewStatus::NeedsAdjudication:
        return QColor(0xe6, 0x9b, 0x00);
    case ReviewStatus::Pending:
        break;
    }
    return {};
}

QString RecordTableModel::previewText(const StoredRecord& r, int maxChars)
{
    // The record's first text field(s) on one line: what an annotator scans for. Only the first
    // maxChars * 4 bytes are read (cut at a UTF-8 boundary): a 500 KB text record costs no more
    // per repaint than a short one.
    std::string text;
    const size_t limit = size_t(std::max(maxChars, 1)) * 4;
    bool cut = false;
    const auto append = [&](const std::string& piece) {
        if (piece.empty())
            return;
        if (text.size() >= limit) {
            cut = true;
            return;
        }
        if (!text.empty())
            text += " → ";
        size_t n = std::min(piece.size(), limit - std::min(limit, text.size()));
        while (n < piece.size() && n > 0 && (static_cast<unsigned char>(piece[n]) & 0xC0) == 0x80)
            --n;  // not inside a character
        cut = cut || n < piece.size();
        text.append(piece, 0, n);
    };
    const auto& f = r.fields;
    auto take = [&](const char* key) {
        if (f.contains(key) && f[key].is_string())
            append(f[key].get_ref<const std::string&>());
    };
    if (r.kind == "chat" && f.contains("messages") && f["messages"].is_array()) {
        for (const auto& m : f["messages"]) {
            if (text.size() >= limit)
                break;
            if (m.is_object() && m.contains("content") && m["content"].is_string() &&
                m.value("role", "") != "system")
                append(m["content"].get_ref<const std::string&>());
        }
    } else {
        for (const char* key : {"instruction", "input", "output", "prompt", "completion", "text"})
            take(key);
    }
    QString s = QString::fromStdString(text).simplified();
    if (s.size() > maxChars)
        s = s.left(maxChars - 1) + QChar(0x2026);
    else if (cut)
        s += QChar(0x2026);
    return s;
}

QVariant RecordTableModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_ids.size()) || index.column() >= ColumnCount)
        return {};
    if (role != Qt::DisplayRole && role != Qt::ForegroundRole && role != Qt::TextAlignmentRole &&
        role != Qt::ToolTipRole && role != IdRole && role != Qt::FontRole)
        return {};
    if (role == Qt::TextAlignmentRole) {
        const int c = index.column();
        const bool number = c == ColId || c == ColTokens || c == ColRating;
        return QVariant::fromValue(
            Qt::Alignment((number ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter));
    }
    const StoredRecord* r = recordAt(index.row());
    if (!r)
        return {};
    if (role == IdRole)
        return qint64(r->id);
    if (role == Qt::ForegroundRole) {
        if (index.column() == ColStatus) {
            const QColor c = statusColor(r->status);
            return c.isValid() ? QVariant(c) : QVariant();
        }
        if (index.column() == ColFlags && !r->flags.empty())
            return QColor(0xc0, 0x39, 0x2b);
        return {};
    }
    if (role == Qt::FontRole) {
        if (index.column() == ColStatus && r->status != ReviewStatus::Pending) {
            QFont bold;
            bold.setBold(true);
            return bold;
        }
        return {};
    }
    if (role == Qt::ToolTipRole) {
        if (index.column() == ColPreview)
            return previewText(*r, 1000);
        if (index.column() == ColStatus)
            return QString::fromLatin1(reviewStatusName(r->status));
        return {};
    }
    switch (index.column()) {
    case ColId:
        return qint64(r->id);
    case ColStatus:
        return statusText(r->status);
    case ColSplit:
        return QString::fromStdString(r->split);
    case ColKind:
        return QString::fromStdString(r->kind);
    case ColPreview:
        return previewText(*r);
    case ColTokens:
        return r->tokenCount >= 0 ? QVariant(qint64(r->tokenCount)) : QVariant(QStringLiteral("–"));
    case ColRating:
        return r->rating ? QVariant(*r->rating) : QVariant(QString());
    case ColSynthetic:
        return r->synthetic ? tr("synthetic") : QString();
    case ColFlags: {
        QStringList flags;
        for (const std::string& f : r->flags)
            flags << QString::fromStdString(f);
        return flags.join(QStringLiteral(", "));
    }
    default:
        return {};
    }
}

QVariant RecordTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    if (orientation == Qt::Vertical)
        return section + 1;
    switch (section) {
    case ColId:
        return tr("Id");
    case ColStatus:
        return tr("Status");
    case ColSplit:
        return tr("Split");
    case ColKind:
        return tr("Kind");
    case ColPreview:
        return tr("Text");
    case ColTokens:
        return tr("Tokens");
    case ColRating:
        return tr("Rating");
    case ColSynthetic:
        return tr("Synthetic");
    case ColFlags:
        return tr("Scan flags");
    default:
        return {};
    }
}

void RecordTableModel::sort(int column, Qt::SortOrder order)
{
    const RecordOrder o = orderOf(column).value_or(RecordOrder::Id);
    const bool descending = order == Qt::DescendingOrder;
    if (o == m_order && descending == m_descending)
        return;
    m_order = o;
    m_descending = descending;
    requestIds(false);  // the same records in the new order
}

}  // namespace tb
