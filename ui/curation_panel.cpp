// Curation tab of the Data page: dedup clusters, the leak/PII scan and chunking, each run by core
// on a worker.
#include "data_jobs.h"
#include "data_panels.h"
#include "record_table_model.h"

#include "data/ingest/ingest.h"
#include "data/store/store.h"
#include "tokenizer/tokenizer.h"

#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QTreeView>
#include <QVBoxLayout>

namespace tb {

namespace {
const int kClustersShown = 300;
const int kMembersShown = 50;  // of each cluster shown (one cluster can hold most of a store)
const int kFlagsShown = 2000;

// The first records of the first clusters as table text (on the job's worker, Cancel checked).
std::vector<std::vector<QString>> dedupPreviews(const DataStore& store, const DedupReport& r,
                                                const CurateProgress& progress)
{
    std::vector<std::vector<QString>> previews;
    const size_t clusters = std::min(r.clusterIds.size(), size_t(kClustersShown));
    for (size_t c = 0; c < clusters; ++c) {
        if (progress &&
            !progress("reading the clusters' records", 0.95 + 0.05 * double(c) / double(clusters)))
            break;  // cancelled: the result stands, fewer clusters are shown
        previews.emplace_back();
        const auto& ids = r.clusterIds[c];
        for (size_t i = 0; i < ids.size() && i < size_t(kMembersShown); ++i)
            previews.back().push_back(RecordTableModel::previewText(store.record(ids[i]), 120));
    }
    return previews;
}
}  // namespace

CurationPanel::CurationPanel(DataContext context, QWidget* parent)
    : QWidget(parent), m_ctx(std::move(context))
{
    auto* layout = new QVBoxLayout(this);

    auto* dedupBox = new QGroupBox(tr("Duplicates"), this);
    auto* dedupLayout = new QVBoxLayout(dedupBox);
    auto* dedupRow = new QHBoxLayout();
    m_near = new QDoubleSpinBox(dedupBox);
    m_near->setRange(0.0, 1.0);
    m_near->setSingleStep(0.05);
    m_near->setDecimals(2);
    m_near->setValue(0.8);
    m_near->setSpecialValueText(tr("exact only"));
    m_near->setToolTip(
        tr("Near duplicates: MinHash + exact Jaccard over 3-word shingles at or above this "
           "similarity (0: exact duplicates only)"));
    m_find = new QPushButton(tr("Find"), dedupBox);
    m_apply = new QPushButton(tr("Remove duplicates"), dedupBox);
    m_undo = new QPushButton(tr("Undo"), dedupBox);
    dedupRow->addWidget(new QLabel(tr("Near threshold"), dedupBox));
    dedupRow->addWidget(m_near);
    dedupRow->addStretch(1);
    dedupRow->addWidget(m_find);
    dedupRow->addWidget(m_apply);
    dedupRow->addWidget(m_undo);
    dedupLayout->addLayout(dedupRow);
    m_dedupSummary = new QLabel(dedupBox);
    m_dedupSummary->setWordWrap(true);
    dedupLayout->addWidget(m_dedupSummary);
    m_clusters = new QStandardItemModel(0, 2, this);
    m_clusters->setHorizontalHeaderLabels({tr("Record"), tr("Text")});
    m_clusterView = new QTreeView(dedupBox);
    m_clusterView->setModel(m_clusters);
    m_clusterView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_clusterView->setColumnWidth(0, 130);
    m_clusterView->setUniformRowHeights(true);
    dedupLayout->addWidget(m_clusterView, 1);
    layout->addWidget(dedupBox, 3);

    auto* scanBox = new QGroupBox(tr("Leaks and personal data"), this);
    auto* scanLayout = new QVBoxLayout(scanBox);
    auto* scanRow = new QHBoxLayout();
    m_scanSummary = new QLabel(scanBox);
    m_scanSummary->setWordWrap(true);
    auto* scanButton = new QPushButton(tr("Scan"), scanBox);
    scanRow->addWidget(m_scanSummary, 1);
    scanRow->addWidget(scanButton);
    scanLayout->addLayout(scanRow);
    m_flags = new QTableWidget(0, 4, scanBox);
    m_flags->setHorizontalHeaderLabels(
        {tr("Record"), tr("Kind"), tr("Field"), tr("Match (masked)")});
    m_flags->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_flags->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_flags->verticalHeader()->setVisible(false);
    m_flags->horizontalHeader()->setStretchLastSection(true);
    m_flags->setColumnWidth(0, 60);
    m_flags->setColumnWidth(1, 90);
    m_flags->setColumnWidth(2, 80);
    scanLayout->addWidget(m_flags, 1);
    layout->addWidget(scanBox, 2);

    auto* chunkBox = new QGroupBox(tr("Chunk long text records"), this);
    auto* chunkLayout = new QVBoxLayout(chunkBox);
    auto* chunkRow = new QHBoxLayout();
    m_chunkMax = new QSpinBox(chunkBox);
    m_chunkMax->setRange(8, 1 << 20);
    m_chunkMax->setValue(256);
    m_chunkMax->setSuffix(tr(" tokens"));
    m_chunkOverlap = new QSpinBox(chunkBox);
    m_chunkOverlap->setRange(0, 1 << 19);
    m_chunkOverlap->setValue(32);
    m_chunkOverlap->setSuffix(tr(" overlap"));
    m_chunkOverlap->setMaximum((m_chunkMax->value() - 1) / 2);
    // The overlap stays below half the chunk (a smaller chunk lowers it).
    connect(m_chunkMax, &QSpinBox::valueChanged, m_chunkOverlap,
            [this](int tokens) { m_chunkOverlap->setMaximum((tokens - 1) / 2); });
    auto* chunkPreview = new QPushButton(tr("Preview"), chunkBox);
    m_chunkApply = new QPushButton(tr("Apply"), chunkBox);
    m_chunkUndo = new QPushButton(tr("Undo"), chunkBox);
    chunkRow->addWidget(m_chunkMax);
    chunkRow->addWidget(m_chunkOverlap);
    chunkRow->addStretch(1);
    chunkRow->addWidget(chunkPreview);
    chunkRow->addWidget(m_chunkApply);
    chunkRow->addWidget(m_chunkUndo);
    chunkLayout->addLayout(chunkRow);
    m_chunkSummary = new QLabel(chunkBox);
    m_chunkSummary->setWordWrap(true);
    chunkLayout->addWidget(m_chunkSummary);
    layout->addWidget(chunkBox);

    connect(m_find, &QPushButton::clicked, this, &CurationPanel::findDuplicates);
    connect(m_apply, &QPushButton::clicked, this, &CurationPanel::applyDedup);
    connect(m_undo, &QPushButton::clicked, this, &CurationPanel::undoDedup);
    connect(scanButton, &QPushButton::clicked, this, &CurationPanel::scan);
    connect(chunkPreview, &QPushButton::clicked, this, &CurationPanel::previewChunks);
    connect(m_chunkApply, &QPushButton::clicked, this, &CurationPanel::applyChunks);
    connect(m_chunkUndo, &QPushButton::clicked, this, &CurationPanel::undoChunks);
    connect(m_clusterView->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& current) {
                const QVariant id = current.siblingAtColumn(0).data(Qt::UserRole);
                if (id.isValid() && m_ctx.showRecord)
                    m_ctx.showRecord(id.toLongLong());
            });
    connect(m_flags, &QTableWidget::currentCellChanged, this, [this](int row) {
        if (row >= 0 && m_flags->item(row, 0) && m_ctx.showRecord)
            m_ctx.showRecord(m_flags->item(row, 0)->text().toLongLong());
    });
    clear();
}

void CurationPanel::clear()
{
    m_dedup.reset();
    m_scan.reset();
    m_dedupOp = 0;
    m_chunkOp = 0;
    m_chunkPreviewed = false;
    m_clusters->removeRows(0, m_clusters->rowCount());
    m_flags->setRowCount(0);
    m_dedupSummary->setText(
        tr("Find shows clusters of duplicates; the first record of each is kept."));
    m_scanSummary->setText(
        tr("Keys, tokens, passwords in URLs, emails, phone, card and IBAN numbers."));
    m_chunkSummary->setText(tr("Splits text records longer than the limit by the model's tokens."));
    updateButtons();
}

std::optional<double> CurationPanel::nearThreshold() const
{
    return m_near->value() > 0 ? std::optional<double>(m_near->value()) : std::nullopt;
}

void CurationPanel::setNearThreshold(double threshold)
{
    m_near->setValue(threshold);
}

void CurationPanel::setChunkOptions(int maxTokens, int overlapTokens)
{
    m_chunkMax->setValue(maxTokens);
    m_chunkOverlap->setValue(overlapTokens);
}

QString CurationPanel::chunkSummary() const
{
    return m_chunkSummary->text();
}

void CurationPanel::updateButtons()
{
    m_apply->setEnabled(m_dedup && m_dedup->operationId == 0 &&
                        m_dedup->exactDuplicates + m_dedup->nearDuplicates > 0);
    m_undo->setEnabled(m_dedupOp > 0);
    m_chunkApply->setEnabled(m_chunkPreviewed);
    m_chunkUndo->setEnabled(m_chunkOp > 0);
}

void CurationPanel::showDedup(const DedupReport& r,
                              const std::vector<std::vector<QString>>& previews)
{
    m_dedup = r;
    m_clusters->removeRows(0, m_clusters->rowCount());
    for (size_t c = 0; c < r.clusterIds.size() && c < previews.size(); ++c) {
        auto* top = new QStandardItem(tr("Cluster %1").arg(c + 1));
        m_clusters->appendRow(
            {top, new QStandardItem(tr("%n record(s)", nullptr, int(r.clusterIds[c].size())))});
        for (size_t i = 0; i < r.clusterIds[c].size() && i < previews[c].size(); ++i) {
            const qint64 id = r.clusterIds[c][i];
            auto* record = new QStandardItem(i == 0 ? tr("#%1 (kept)").arg(id)
                                                    : QStringLiteral("#%1").arg(id));
            record->setData(id, Qt::UserRole);
            if (i > 0)
                record->setForeground(RecordTableModel::statusColor(ReviewStatus::Rejected));
            top->appendRow({record, new QStandardItem(previews[c][i])});
        }
        if (r.clusterIds[c].size() > previews[c].size())
            top->appendRow({new QStandardItem(tr("… %n more", nullptr,
                                                 int(r.clusterIds[c].size() - previews[c].size()))),
                            new QStandardItem()});
    }
    const QString counts = tr("%1 records: %2 exact and %3 near duplicates in %4 clusters")
                               .arg(r.records)
                               .arg(r.exactDuplicates)
                               .arg(r.nearDuplicates)
                               .arg(r.clusters);
    m_dedupSummary->setText(
        r.operationId > 0
            ? tr("Removed %1 (operation %2). %3.").arg(r.removed).arg(r.operationId).arg(counts)
            : counts + (r.clusters > qint64(previews.size())
                            ? tr(" (the first %1 shown).").arg(previews.size())
                            : QStringLiteral(".")));
    updateButtons();
}

bool CurationPanel::findDuplicates()
{
    const std::optional<double> near = nearThreshold();
    const std::string who = m_ctx.who(false).toStdString();
    return m_ctx.jobs->run(
        tr("Find duplicates"),
        [this, near, who](DataStore& store, const CurateProgress& progress) -> DataJobs::Finish {
            DedupReport r =
                dedupRecords(store, near, false, who.empty() ? "studio" : who, progress);
            std::vector<std::vector<QString>> previews = dedupPreviews(store, r, progress);
            return [this, r = std::move(r), previews = std::move(previews)] {
                showDedup(r, previews);
            };
        });
}

bool CurationPanel::applyDedup()
{
    const QString who = m_ctx.who(true);
    if (who.isEmpty())
        return false;
    const std::optional<double> near = nearThreshold();
    return m_ctx.jobs->run(
        tr("Remove duplicates"),
        [this, near, who](DataStore& store, const CurateProgress& progress) -> DataJobs::Finish {
            DedupReport r = dedupRecords(store, near, true, who.toStdString(), progress);
            std::vector<std::vector<QString>> previews = dedupPreviews(store, r, progress);
            return [this, r = std::move(r), previews = std::move(previews)] {
                m_dedupOp = r.operationId;
                showDedup(r, previews);
                m_ctx.message(tr("Removed %1 duplicates; Undo brings them back").arg(r.removed));
            };
        });
}

bool CurationPanel::undoDedup()
{
    const QString who = m_ctx.who(true);
    if (who.isEmpty() || m_dedupOp <= 0)
        return false;
    const qint64 op = m_dedupOp;
    return m_ctx.jobs->run(
        tr("Undo dedup"),
        [this, op, who](DataStore& store, const CurateProgress&) -> DataJobs::Finish {
            store.undo(op, who.toStdString());
            return [this, op] {
                m_dedupOp = 0;
                m_dedup.reset();
                m_clusters->clear();
                m_dedupSummary->setText(
                    tr("Operation %1 undone: the duplicates are back.").arg(op));
                updateButtons();
            };
        });
}

bool CurationPanel::scan()
{
    const QString who = m_ctx.who(false);
    return m_ctx.jobs->run(
        tr("Scan"),
        [this, who](DataStore& store, const CurateProgress& progress) -> DataJobs::Finish {
            ScanReport r =
                scanRecords(store, who.isEmpty() ? "studio" : who.toStdString(), progress);
            return [this, r = std::move(r)] {
                m_scan = r;
                QStringList kinds;
                for (const auto& [kind, n] : r.byKind)
                    kinds << QStringLiteral("%1 %2").arg(n).arg(QString::fromStdString(kind));
                m_scanSummary->setText(r.flagged == 0
                                           ? tr("%1 records scanned: nothing found.").arg(r.records)
                                           : tr("%1 of %2 records flagged: %3.")
                                                 .arg(r.flagged)
                                                 .arg(r.records)
                                                 .arg(kinds.join(QStringLiteral(", "))));
                const int shown = int(std::min<size_t>(r.flags.size(), kFlagsShown));
                m_flags->setRowCount(shown);
                for (int i = 0; i < shown; ++i) {
                    const ScanFlag& f = r.flags[size_t(i)];
                    m_flags->setItem(i, 0, new QTableWidgetItem(QString::number(f.recordId)));
                    m_flags->setItem(i, 1, new QTableWidgetItem(QString::fromStdString(f.kind)));
                    m_flags->setItem(i, 2, new QTableWidgetItem(QString::fromStdString(f.field)));
                    m_flags->setItem(i, 3, new QTableWidgetItem(QString::fromStdString(f.masked)));
                }
            };
        });
}

bool CurationPanel::previewChunks()
{
    ChunkOptions o;
    o.maxTokens = m_chunkMax->value();
    o.overlapTokens = m_chunkOverlap->value();
    const std::string modelDir = m_ctx.modelDir().toStdString();
    return m_ctx.jobs->run(
        tr("Chunk preview"),
        [this, o, modelDir](DataStore& store, const CurateProgress& progress) -> DataJobs::Finish {
            const std::unique_ptr<Tokenizer> tokenizer = loadTokenizer(modelDir);
            const ChunkReport r =
                chunkStoreRecords(store, *tokenizer, o, false, "studio", progress);
            return [this, r, o] {
                m_chunkPreviewed = r.records > 0;
                m_chunkSummary->setText(
                    r.records == 0 ? tr("No text record is longer than %1 tokens.").arg(o.maxTokens)
                                   : tr("%1 text records over %2 tokens would become %3 chunks.")
                                         .arg(r.records)
                                         .arg(o.maxTokens)
                                         .arg(r.chunks));
                updateButtons();
            };
        });
}

bool CurationPanel::applyChunks()
{
    const QString who = m_ctx.who(true);
    if (who.isEmpty())
        return false;
    ChunkOptions o;
    o.maxTokens = m_chunkMax->value();
    o.overlapTokens = m_chunkOverlap->value();
    const std::string modelDir = m_ctx.modelDir().toStdString();
    return m_ctx.jobs->run(
        tr("Chunk"),
        [this, o, modelDir, who](DataStore& store,
                                 const CurateProgress& progress) -> DataJobs::Finish {
            const std::unique_ptr<Tokenizer> tokenizer = loadTokenizer(modelDir);
            const ChunkReport r =
                chunkStoreRecords(store, *tokenizer, o, true, who.toStdString(), progress);
            return [this, r] {
                m_chunkOp = r.operationId;
                m_chunkPreviewed = false;
                m_chunkSummary->setText(tr("%1 records replaced by %2 chunks (operation %3).")
                                            .arg(r.records)
                                            .arg(r.chunks)
                                            .arg(r.operationId));
                updateButtons();
            };
        });
}

bool CurationPanel::undoChunks()
{
    const QString who = m_ctx.who(true);
    if (who.isEmpty() || m_chunkOp <= 0)
        return false;
    const qint64 op = m_chunkOp;
    return m_ctx.jobs->run(
        tr("Undo chunking"),
        [this, op, who](DataStore& store, const CurateProgress&) -> DataJobs::Finish {
            store.undo(op, who.toStdString());
            return [this, op] {
                m_chunkOp = 0;
                m_chunkSummary->setText(
                    tr("Operation %1 undone: the original records are back.").arg(op));
                updateButtons();
            };
        });
}

}  // namespace tb
