// Review and History tabs of the Data page (Curation: curation_panel.cpp, Statistics:
// stats_panel.cpp).
#include "data_panels.h"

#include "data_jobs.h"
#include "record_table_model.h"

#include "data/store/store.h"

#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <exception>

namespace tb {

namespace {

QTableWidget* makeTable(const QStringList& headers, QWidget* parent)
{
    auto* t = new QTableWidget(0, int(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    t->verticalHeader()->setVisible(false);
    t->horizontalHeader()->setStretchLastSection(true);
    t->setAlternatingRowColors(true);
    return t;
}

QTableWidgetItem* numberItem(double value, int decimals = -1)
{
    auto* item = new QTableWidgetItem(decimals < 0 ? QString::number(qint64(value))
                                                   : QString::number(value, 'f', decimals));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

}  // namespace

// --- Review

ReviewPanel::ReviewPanel(DataContext context, QWidget* parent)
    : QWidget(parent), m_ctx(std::move(context))
{
    auto* layout = new QVBoxLayout(this);
    auto* agreeBox = new QGroupBox(tr("Agreement between annotators"), this);
    auto* agreeLayout = new QVBoxLayout(agreeBox);
    m_agreement = makeTable(
        {tr("Annotators"), tr("Both decided"), tr("Agreed"), tr("Percent"), tr("Kappa")}, agreeBox);
    m_agreement->setColumnWidth(0, 140);
    agreeLayout->addWidget(m_agreement);
    layout->addWidget(agreeBox, 2);

    auto* queueBox = new QGroupBox(tr("Adjudication queue"), this);
    auto* queueLayout = new QVBoxLayout(queueBox);
    m_queueLabel = new QLabel(queueBox);
    queueLayout->addWidget(m_queueLabel);
    m_queue = new QListWidget(queueBox);
    m_queue->setAlternatingRowColors(true);
    queueLayout->addWidget(m_queue, 1);
    auto* buttons = new QHBoxLayout();
    auto* refresh = new QPushButton(tr("Refresh"), queueBox);
    auto* accept = new QPushButton(tr("Accept"), queueBox);
    auto* reject = new QPushButton(tr("Reject"), queueBox);
    accept->setToolTip(tr("Settle the selected record as accepted (your decision is final)"));
    reject->setToolTip(tr("Settle the selected record as rejected (your decision is final)"));
    buttons->addWidget(refresh);
    buttons->addStretch(1);
    buttons->addWidget(accept);
    buttons->addWidget(reject);
    queueLayout->addLayout(buttons);
    layout->addWidget(queueBox, 3);

    connect(refresh, &QPushButton::clicked, this, &ReviewPanel::refresh);
    connect(accept, &QPushButton::clicked, this,
            [this] { adjudicateSelected(QStringLiteral("accept")); });
    connect(reject, &QPushButton::clicked, this,
            [this] { adjudicateSelected(QStringLiteral("reject")); });
    connect(m_queue, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
        if (item && m_ctx.showRecord)
            m_ctx.showRecord(item->data(Qt::UserRole).toLongLong());
    });
}

void ReviewPanel::refresh()
{
    const int generation = ++m_generation;
    m_ctx.jobs->read(
        this, [this, generation](DataStore& store, const CurateProgress&) -> DataJobs::Finish {
            AgreementReport report = reviewAgreement(store);
            RecordQuery q;
            q.status = ReviewStatus::NeedsAdjudication;
            q.limit = 1000;
            std::vector<std::pair<qint64, QString>> queue;
            store.forEach(q, [&](const StoredRecord& r) {
                queue.emplace_back(r.id, RecordTableModel::previewText(r, 90));
                return true;
            });
            return [this, generation, report = std::move(report), queue = std::move(queue)] {
                if (generation != m_generation)
                    return;  // a newer refresh is on its way
                m_agreement->setRowCount(int(report.pairs.size()));
                for (int i = 0; i < int(report.pairs.size()); ++i) {
                    const PairAgreement& p = report.pairs[size_t(i)];
                    m_agreement->setItem(i, 0,
                                         new QTableWidgetItem(QStringLiteral("%1 – %2").arg(
                                             QString::fromStdString(p.annotatorA),
                                             QString::fromStdString(p.annotatorB))));
                    m_agreement->setItem(i, 1, numberItem(double(p.items)));
                    m_agreement->setItem(i, 2, numberItem(double(p.agreed)));
                    m_agreement->setItem(i, 3, numberItem(p.percent, 1));
                    m_agreement->setItem(i, 4, numberItem(p.kappa, 3));
                }
                const qint64 selected =
                    m_queue->currentItem() ? m_queue->currentItem()->data(Qt::UserRole).toLongLong()
                                           : 0;
                m_queue->clear();
                for (const auto& [id, text] : queue) {
                    auto* item =
                        new QListWidgetItem(QStringLiteral("#%1  %2").arg(id).arg(text), m_queue);
                    item->setData(Qt::UserRole, id);
                    item->setForeground(
                        RecordTableModel::statusColor(ReviewStatus::NeedsAdjudication));
                    if (id == selected)
                        m_queue->setCurrentItem(item);
                }
                m_queueLabel->setText(
                    report.adjudicationQueue == 0
                        ? tr("No records await adjudication.")
                        : tr("%n record(s) where annotators disagree await a final decision.",
                             nullptr, int(report.adjudicationQueue)));
                Q_EMIT refreshed();
            };
        });
}

bool ReviewPanel::adjudicateSelected(const QString& decision)
{
    DataStore* store = m_ctx.store();
    QListWidgetItem* item = m_queue->currentItem();
    if (!store || !item)
        return false;
    if (m_ctx.jobs->busy()) {
        m_ctx.message(tr("Wait for “%1” to finish").arg(m_ctx.jobs->current()));
        return false;
    }
    const QString who = m_ctx.who(true);
    if (who.isEmpty())
        return false;
    const qint64 id = item->data(Qt::UserRole).toLongLong();
    try {
        store->adjudicate(id, decision.toStdString(), who.toStdString());
    } catch (const std::exception& e) {
        m_ctx.message(QString::fromUtf8(e.what()));
        return false;
    }
    const int row = m_queue->row(item);
    delete m_queue->takeItem(row);
    if (m_queue->count() > 0)
        m_queue->setCurrentRow(std::min(row, m_queue->count() - 1));
    m_ctx.message(tr("Record %1 %2ed by %3").arg(id).arg(decision, who));
    m_ctx.changed();
    return true;
}

// --- History

HistoryPanel::HistoryPanel(DataContext context, QWidget* parent)
    : QWidget(parent), m_ctx(std::move(context))
{
    auto* layout = new QVBoxLayout(this);
    m_table = makeTable(
        {tr("Op"), tr("Kind"), tr("Who"), tr("When (UTC)"), tr("Changes"), tr("Summary")}, this);
    m_table->setColumnWidth(0, 50);
    m_table->setColumnWidth(1, 80);
    m_table->setColumnWidth(2, 80);
    m_table->setColumnWidth(3, 150);
    m_table->setColumnWidth(4, 60);
    layout->addWidget(m_table, 1);
    auto* buttons = new QHBoxLayout();
    auto* refresh = new QPushButton(tr("Refresh"), this);
    auto* undo = new QPushButton(tr("Undo selected"), this);
    undo->setToolTip(
        tr("Reverses every change of the operation as a new operation (refused when later work "
           "changed the same fields)"));
    buttons->addWidget(refresh);
    buttons->addStretch(1);
    buttons->addWidget(undo);
    layout->addLayout(buttons);
    connect(refresh, &QPushButton::clicked, this, &HistoryPanel::refresh);
    connect(undo, &QPushButton::clicked, this, &HistoryPanel::undoSelected);
}

void HistoryPanel::refresh()
{
    const int generation = ++m_generation;
    m_ctx.jobs->read(
        this, [this, generation](DataStore& store, const CurateProgress&) -> DataJobs::Finish {
            std::vector<OperationInfo> ops = store.operations();
            // Newest first, the last 1,000 (every review is an operation; a long session makes
            // many).
            std::reverse(ops.begin(), ops.end());
            if (ops.size() > 1000)
                ops.resize(1000);
            return [this, generation, ops = std::move(ops)] {
                if (generation != m_generation)
                    return;
                const qint64 selected =
                    m_table->currentRow() >= 0 && m_table->item(m_table->currentRow(), 0)
                        ? m_table->item(m_table->currentRow(), 0)->text().toLongLong()
                        : 0;
                m_table->setRowCount(int(ops.size()));
                for (int i = 0; i < int(ops.size()); ++i) {
                    const OperationInfo& o = ops[size_t(i)];
                    m_table->setItem(i, 0, numberItem(double(o.id)));
                    m_table->setItem(i, 1, new QTableWidgetItem(QString::fromStdString(o.kind)));
                    m_table->setItem(i, 2, new QTableWidgetItem(QString::fromStdString(o.who)));
                    m_table->setItem(
                        i, 3,
                        new QTableWidgetItem(QString::fromStdString(o.at).left(19).replace(
                            QLatin1Char('T'), QLatin1Char(' '))));
                    m_table->setItem(i, 4, numberItem(double(o.changes)));
                    const std::string summary = o.summary.is_null() || o.summary.empty()
                                                    ? o.params.dump()
                                                    : o.summary.dump();
                    m_table->setItem(
                        i, 5, new QTableWidgetItem(QString::fromStdString(summary).left(200)));
                    if (o.undone)
                        for (int c = 0; c < m_table->columnCount(); ++c)
                            m_table->item(i, c)->setForeground(
                                palette().color(QPalette::PlaceholderText));
                    if (o.id == selected)
                        m_table->selectRow(i);
                }
                Q_EMIT refreshed();
            };
        });
}

bool HistoryPanel::undoSelected()
{
    const int row = m_table->currentRow();
    if (row < 0 || !m_table->item(row, 0))
        return false;
    const qint64 op = m_table->item(row, 0)->text().toLongLong();
    const QString who = m_ctx.who(true);
    if (who.isEmpty())
        return false;
    return m_ctx.jobs->run(tr("Undo operation %1").arg(op),
                           [op, who](DataStore& store, const CurateProgress&) -> DataJobs::Finish {
                               store.undo(op, who.toStdString());
                               return {};
                           });
}

}  // namespace tb
