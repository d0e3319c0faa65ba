// PairTableModel: ordered ids from storedPairIds, rows from storedPair page by page.
#include "pair_table_model.h"

#include "data/store/store.h"

#include <QColor>
#include <QFont>
#include <QPointer>

#include <algorithm>
#include <exception>

namespace tb {

namespace {

QString joinTurns(const std::vector<ChatMessage>& turns, bool withRoles)
{
    QStringList parts;
    for (const ChatMessage& m : turns)
        parts << (withRoles ? QStringLiteral("[%1] %2").arg(QString::fromStdString(m.role),
                                                            QString::fromStdString(m.content))
                            : QString::fromStdString(m.content));
    return parts.join(QStringLiteral("\n\n"));
}

}  // namespace

PairTableModel::PairTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void PairTableModel::setStore(const DataStore* store)
{
    beginResetModel();
    m_store = store;
    m_ids.clear();
    m_pages.clear();
    m_lru.clear();
    endResetModel();
    refresh();
}

void PairTableModel::setAnnotator(const QString& name)
{
    if (name == m_annotator)
        return;
    m_annotator = name;
    if (!m_ids.empty())
        Q_EMIT dataChanged(index(0, ColStatus), index(rowCount() - 1, ColStatus));
}

void PairTableModel::refresh()
{
    const uint64_t generation = ++m_generation;
    if (!m_store) {
        m_pending = false;
        applyIds({});
        return;
    }
    if (!m_loader) {
        std::vector<int64_t> ids;
        try {
            ids = storedPairIds(*m_store);
        } catch (const std::exception&) {
            ids.clear();  // an unreadable store shows as empty; the page reports the error
        }
        m_pending = false;
        applyIds(std::move(ids));
        return;
    }
    m_pending = true;
    QPointer<PairTableModel> self(this);
    m_loader([self, generation](std::vector<int64_t> ids) {
        if (!self || generation != self->m_generation)
            return;  // superseded, or the model is gone
        self->m_pending = false;
        self->applyIds(std::move(ids));
    });
}

void PairTableModel::applyIds(std::vector<int64_t> ids)
{
    if (ids.size() > size_t(INT32_MAX))
        ids.resize(size_t(INT32_MAX));
    beginResetModel();
    m_ids = std::move(ids);
    m_pages.clear();
    m_lru.clear();
    endResetModel();
    Q_EMIT idsLoaded();
}

void PairTableModel::refreshPair(int64_t pairId)
{
    if (!m_store)
        return;
    for (auto& [index, rows] : m_pages)
        for (size_t i = 0; i < rows.size(); ++i)
            if (rows[i].id == pairId) {
                try {
                    rows[i] = storedPair(*m_store, pairId);
                } catch (const std::exception&) {
                    continue;
                }
                const int row = int(index * kPageRows + int64_t(i));
                Q_EMIT dataChanged(this->index(row, 0), this->index(row, ColumnCount - 1));
            }
}

const std::vector<StoredPair>* PairTableModel::page(int64_t index) const
{
    if (!m_store)
        return nullptr;
    if (auto it = m_pages.find(index); it != m_pages.end()) {
        m_lru.remove(index);
        m_lru.push_front(index);
        return &it->second;
    }
    const size_t begin = size_t(index) * kPageRows, end = std::min(m_ids.size(), begin + kPageRows);
    std::vector<StoredPair> rows;
    try {  // one page by id through the store's indexes (an id deleted underneath: removed)
        rows = storedPairsById(*m_store, std::vector<int64_t>(m_ids.begin() + ptrdiff_t(begin),
                                                              m_ids.begin() + ptrdiff_t(end)));
    } catch (const std::exception&) {
        for (size_t i = begin; i < end; ++i) {
            StoredPair& gone = rows.emplace_back();
            gone.id = m_ids[i];
            gone.removed = true;
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

const StoredPair* PairTableModel::pairAt(int row) const
{
    if (row < 0 || row >= int(m_ids.size()))
        return nullptr;
    const auto* rows = page(row / kPageRows);
    const size_t i = size_t(row % kPageRows);
    return rows && i < rows->size() ? &(*rows)[i] : nullptr;
}

int64_t PairTableModel::idAt(int row) const
{
    return row >= 0 && row < int(m_ids.size()) ? m_ids[size_t(row)] : 0;
}

int PairTableModel::rowOf(int64_t pairId) const
{
    const auto it = std::find(m_ids.begin(), m_ids.end(), pairId);
    return it == m_ids.end() ? -1 : int(it - m_ids.begin());
}

int PairTableModel::nextUnjudged(int row) const
{
    // The annotator's judged pairs in one query, so a pass over a fully judged list reads no
    // page; only candidates are loaded, to see whether they were removed.
    std::vector<int64_t> judged;
    if (m_store) {
        try {
            judged = pairsJudgedBy(*m_store, m_annotator.toStdString());
        } catch (const std::exception&) {
            // none skipped: every candidate's page is read, as before
        }
    }
    const int n = rowCount();
    for (int k = 1; k <= n; ++k) {
        const int r = ((row < 0 ? -1 : row) + k) % n;
        if (std::binary_search(judged.begin(), judged.end(), m_ids[size_t(r)]))
            continue;
        const StoredPair* p = pairAt(r);
        if (p && !p->removed && shownChoice(*p, m_annotator) == QLatin1String("unjudged"))
            return r;
    }
    return -1;
}

int PairTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_ids.size());
}

int PairTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString PairTableModel::shownVerdict(const StoredPair& pair, const std::string& verdict)
{
    if (verdict == "chosen")
        return pair.swapped ? QStringLiteral("B") : QStringLiteral("A");
    if (verdict == "rejected")
        return pair.swapped ? QStringLiteral("A") : QStringLiteral("B");
    return QString::fromStdString(verdict);
}

QString PairTableModel::shownChoice(const StoredPair& pair, const QString& annotator)
{
    const std::string who = annotator.toStdString();
    for (const PairChoice& c : pair.choices)
        if (c.annotator == who)
            return shownVerdict(pair, c.verdict);
    return QStringLiteral("unjudged");
}

QString PairTableModel::promptText(const PairExample& pair)
{
    return pair.plainText ? QString::fromStdString(pair.promptText) : joinTurns(pair.prompt, true);
}

std::string PairTableModel::storedSide(const StoredPair& pair, int side)
{
    return (side == 0) != pair.swapped ? "chosen" : "rejected";
}

QString PairTableModel::answerText(const StoredPair& pair, int side)
{
    const bool chosen = storedSide(pair, side) == "chosen";
    const PairExample& p = pair.pair;
    if (p.plainText)
        return QString::fromStdString(chosen ? p.chosenText : p.rejectedText);
    return joinTurns(chosen ? p.chosen : p.rejected, false);
}

QVariant PairTableModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_ids.size()) || index.column() >= ColumnCount)
        return {};
    if (role != Qt::DisplayRole && role != Qt::ForegroundRole && role != Qt::ToolTipRole &&
        role != IdRole && role != Qt::FontRole && role != Qt::TextAlignmentRole)
        return {};
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(Qt::Alignment(
            (index.column() == ColId ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter));
    const StoredPair* p = pairAt(index.row());
    if (!p)
        return {};
    if (role == IdRole)
        return qint64(p->id);
    const QString status = shownChoice(*p, m_annotator);
    if (role == Qt::ForegroundRole) {
        if (index.column() == ColStatus && status != QLatin1String("unjudged"))
            return QColor(0x27, 0xae, 0x60);
        if (index.column() == ColVerdict && p->verdict == "disputed")
            return QColor(0xe6, 0x9b, 0x00);
        if (index.column() == ColFlags && !p->flags.empty())
            return QColor(0xc0, 0x39, 0x2b);
        return {};
    }
    if (role == Qt::FontRole) {
        if (index.column() != ColStatus || status == QLatin1String("unjudged"))
            return {};
        QFont bold;
        bold.setBold(true);
        return bold;
    }
    if (role == Qt::ToolTipRole)
        return index.column() == ColPrompt ? promptText(p->pair).left(1000) : QVariant();
    switch (index.column()) {
    case ColId:
        return qint64(p->id);
    case ColPrompt: {
        QString s = promptText(p->pair).simplified();
        return s.size() > 160 ? s.left(159) + QChar(0x2026) : s;
    }
    case ColStatus:
        return status;
    case ColVerdict:
        return p->adjudication ? tr("%1 (adjudicated)").arg(shownVerdict(*p, *p->adjudication))
                               : shownVerdict(*p, p->verdict);
    case ColAnnotators: {
        QStringList names;
        for (const PairChoice& c : p->choices)
            names << QStringLiteral("%1: %2").arg(QString::fromStdString(c.annotator),
                                                  shownVerdict(*p, c.verdict));
        return names.join(QStringLiteral(", "));
    }
    case ColFlags: {
        QStringList flags;
        for (const std::string& f : p->flags)
            flags << QString::fromStdString(f);
        return flags.join(QStringLiteral(", "));
    }
    default:
        return {};
    }
}

QVariant PairTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    if (orientation == Qt::Vertical)
        return section + 1;
    switch (section) {
    case ColId:
        return tr("Id");
    case ColPrompt:
        return tr("Prompt");
    case ColStatus:
        return tr("Your choice");
    case ColVerdict:
        return tr("Training reads");
    case ColAnnotators:
        return tr("Annotators");
    case ColFlags:
        return tr("Flags");
    default:
        return {};
    }
}

}  // namespace tb
