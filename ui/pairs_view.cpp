// Pairs tab of the Data page: the pair table, the side-by-side A/B review with its keys, in-place
// answer edits, agreement and adjudication, and the pair import on the page's worker.
#include "pairs_view.h"

#include "data_jobs.h"
#include "pair_table_model.h"

#include "data/curate/pair_curate.h"
#include "data/store/pairs_store.h"
#include "data/store/store.h"
#include "util/error.h"
#include "util/json_depth.h"

#include <QComboBox>
#include <QEvent>
#include <QFileDialog>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>
#include <fstream>

namespace tb {

namespace {

QPlainTextEdit* makeTextView(const QString& name, QWidget* parent)
{
    auto* view = new QPlainTextEdit(parent);
    view->setObjectName(name);
    view->setReadOnly(true);
    view->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    return view;
}

QTableWidget* makeTable(const QStringList& headers, QWidget* parent)
{
    auto* t = new QTableWidget(0, int(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    t->verticalHeader()->setVisible(false);
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

// The table lists the first rejected rows (a wrong layout rejects every row of a file that may
// hold 100,000s); the summary line has the count.
constexpr size_t kRejectionsShown = 10000;

void fillRejections(QTableWidget* table, const std::vector<PairRejection>& rows, size_t total = 0)
{
    total = std::max(total, rows.size());
    const int shown = int(std::min(rows.size(), kRejectionsShown));
    const bool more = total > size_t(shown);
    table->setRowCount(shown + (more ? 1 : 0));
    for (int i = 0; i < shown; ++i) {
        const PairRejection& r = rows[size_t(i)];
        table->setItem(i, 0, new QTableWidgetItem(QString::fromStdString(r.location)));
        table->setItem(i, 1, new QTableWidgetItem(QString::fromStdString(r.reason)));
    }
    if (more)
        table->setItem(
            shown, 0,
            new QTableWidgetItem(
                QObject::tr("… %1 more rows rejected, not listed").arg(total - size_t(shown))));
}

// The rows of a JSONL pair file that parsePairRow refuses, with their line and reason: what
// readPairFile reports, for a file it throws on because no row is valid (then importPairs stores
// nothing and returns no rejections). The first kRejectionsShown are kept, all are counted.
std::vector<PairRejection> jsonlRejections(const std::string& path, PairLayout layout,
                                           size_t& total)
{
    std::vector<PairRejection> out;
    total = 0;
    std::ifstream in(path, std::ios::binary);
    std::string row;
    for (int64_t line = 1; std::getline(in, row); ++line) {
        if (row.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        std::string reason;
        try {
            checkJsonDepth(row, path + ":" + std::to_string(line));
            parsePairRow(nlohmann::json::parse(row), layout);
            continue;
        } catch (const nlohmann::json::parse_error& e) {
            reason = std::string("not JSON: ") + e.what();
        } catch (const std::exception& e) {
            reason = e.what();
        }
        if (++total <= kRejectionsShown)
            out.push_back({path + ":" + std::to_string(line), std::move(reason)});
    }
    return out;
}

QTableWidgetItem* numberItem(double value, int decimals = -1)
{
    auto* item = new QTableWidgetItem(decimals < 0 ? QString::number(qint64(value))
                                                   : QString::number(value, 'f', decimals));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

}  // namespace

PairsView::PairsView(DataContext context, QWidget* parent)
    : QWidget(parent), m_ctx(std::move(context))
{
    m_model = new PairTableModel(this);
    m_model->setIdLoader([this](std::function<void(std::vector<int64_t>)> deliver) {
        m_ctx.jobs->read(m_model, [deliver](DataStore& s, const CurateProgress&) {
            std::vector<int64_t> ids = storedPairIds(s);
            return DataJobs::Finish([deliver, ids = std::move(ids)] { deliver(ids); });
        });
    });
    connect(m_model, &PairTableModel::idsLoaded, this, &PairsView::afterIds);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(buildReviewArea());
    split->addWidget(buildSidePanel());
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split);
    buildShortcuts();
}

QWidget* PairsView::buildReviewArea()
{
    auto* area = new QSplitter(Qt::Vertical, this);
    m_table = new QTableView(area);
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->setVisible(false);
    const int widths[] = {55, 300, 90, 130, 160, 90};
    for (int c = 0; c < PairTableModel::ColumnCount; ++c)
        m_table->setColumnWidth(c, widths[c]);
    m_table->horizontalHeader()->setSectionResizeMode(PairTableModel::ColPrompt,
                                                      QHeaderView::Stretch);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this] { showCurrent(); });

    auto* pairBox = new QGroupBox(tr("Pair"), area);
    auto* pairLayout = new QVBoxLayout(pairBox);
    auto* keys = new QHBoxLayout();
    auto addButton = [&](const QString& text, const QString& tip, auto slot) {
        auto* b = new QPushButton(text, pairBox);
        b->setToolTip(tip);
        connect(b, &QPushButton::clicked, this, slot);
        keys->addWidget(b);
        return b;
    };
    addButton(tr("A is better (A)"), tr("Your choice: answer A"),
              [this] { choose(QStringLiteral("a")); });
    addButton(tr("B is better (B)"), tr("Your choice: answer B"),
              [this] { choose(QStringLiteral("b")); });
    addButton(tr("Tie (T)"), tr("Both equally good or bad"),
              [this] { choose(QStringLiteral("tie")); });
    addButton(tr("Skip (S)"), tr("Leave this pair out of training"),
              [this] { choose(QStringLiteral("skip")); });
    keys->addSpacing(12);
    addButton(tr("Swap (W)"), tr("Show the other answer as A"), [this] { swapCurrent(); });
    addButton(tr("Undo (Ctrl+Z)"), tr("Undo this tab's last change"), [this] { undoLast(); });
    keys->addStretch(1);
    m_count = new QLabel(pairBox);
    keys->addWidget(m_count);
    pairLayout->addLayout(keys);
    m_prompt = makeTextView(QStringLiteral("pairPrompt"), pairBox);
    m_prompt->setMaximumHeight(m_prompt->fontMetrics().lineSpacing() * 7 + 12);
    pairLayout->addWidget(m_prompt);
    auto* answers = new QHBoxLayout();
    for (int side = 0; side < 2; ++side) {
        auto* column = new QVBoxLayout();
        auto* head = new QHBoxLayout();
        m_answerLabel[side] =
            new QLabel(side == 0 ? tr("<b>Answer A</b>") : tr("<b>Answer B</b>"), pairBox);
        head->addWidget(m_answerLabel[side], 1);
        auto* edit = new QPushButton(side == 0 ? tr("Edit A (E)") : tr("Edit B"), pairBox);
        edit->setToolTip(tr("Edit this answer in place (or double-click it); Ctrl+Return saves"));
        connect(edit, &QPushButton::clicked, this, [this, side] { editAnswer(side); });
        head->addWidget(edit);
        column->addLayout(head);
        m_answer[side] = makeTextView(
            side == 0 ? QStringLiteral("pairAnswerA") : QStringLiteral("pairAnswerB"), pairBox);
        m_answer[side]->viewport()->installEventFilter(this);
        m_answer[side]->installEventFilter(this);
        column->addWidget(m_answer[side], 1);
        answers->addLayout(column, 1);
    }
    pairLayout->addLayout(answers, 1);
    auto* editRow = new QHBoxLayout();
    editRow->addStretch(1);
    m_save = new QPushButton(tr("Save answer (Ctrl+Return)"), pairBox);
    m_cancelEdit = new QPushButton(tr("Cancel edit (Esc)"), pairBox);
    connect(m_save, &QPushButton::clicked, this, &PairsView::saveEdit);
    connect(m_cancelEdit, &QPushButton::clicked, this, &PairsView::cancelEdit);
    editRow->addWidget(m_save);
    editRow->addWidget(m_cancelEdit);
    pairLayout->addLayout(editRow);
    m_save->setVisible(false);
    m_cancelEdit->setVisible(false);
    area->addWidget(m_table);
    area->addWidget(pairBox);
    area->setStretchFactor(0, 2);
    area->setStretchFactor(1, 3);
    return area;
}

QWidget* PairsView::buildSidePanel()
{
    auto* side = new QWidget(this);
    auto* layout = new QVBoxLayout(side);
    auto* agreeBox = new QGroupBox(tr("Agreement on pairwise choices"), side);
    auto* agreeLayout = new QVBoxLayout(agreeBox);
    m_agreement = makeTable(
        {tr("Annotators"), tr("Both judged"), tr("Agreed"), tr("Percent"), tr("Kappa")}, agreeBox);
    m_agreement->setColumnWidth(0, 140);
    m_agreement->setToolTip(tr("Over the pairs both judged, skips left out; a choice counts by "
                               "the answer it picked, whichever side that answer was shown on"));
    agreeLayout->addWidget(m_agreement, 1);
    agreeLayout->addWidget(new QLabel(tr("Disputed pairs (annotators differ):"), agreeBox));
    m_disputed = new QListWidget(agreeBox);
    agreeLayout->addWidget(m_disputed, 1);
    auto* adjudicateRow = new QHBoxLayout();
    adjudicateRow->addWidget(new QLabel(tr("Final choice"), agreeBox));
    for (const char* c : {"a", "b", "tie", "skip"}) {
        const QString choice = QLatin1String(c);
        auto* b = new QPushButton(choice == QLatin1String("a")   ? tr("A")
                                  : choice == QLatin1String("b") ? tr("B")
                                                                 : choice,
                                  agreeBox);
        b->setToolTip(tr("Settle the current pair (your choice overrides the annotators')"));
        connect(b, &QPushButton::clicked, this, [this, choice] { adjudicate(choice); });
        adjudicateRow->addWidget(b);
    }
    adjudicateRow->addStretch(1);
    agreeLayout->addLayout(adjudicateRow);
    layout->addWidget(agreeBox, 3);
    connect(m_disputed, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
        if (item)
            selectPair(item->data(Qt::UserRole).toLongLong());
    });

    auto* importBox = new QGroupBox(tr("Import pairs"), side);
    auto* importLayout = new QVBoxLayout(importBox);
    auto* importRow = new QHBoxLayout();
    m_layout = new QComboBox(importBox);
    for (PairLayout l :
         {PairLayout::Auto, PairLayout::Standard, PairLayout::HhRlhf, PairLayout::UltraFeedback})
        m_layout->addItem(QLatin1String(pairLayoutName(l)), int(l));
    m_layout->setToolTip(tr("TRL standard (prompt/chosen/rejected), HH-RLHF (two conversations) "
                            "or UltraFeedback (with scores); auto detects each row"));
    auto* importButton = new QPushButton(tr("Import pairs…"), importBox);
    connect(importButton, &QPushButton::clicked, this, &PairsView::openImport);
    importRow->addWidget(new QLabel(tr("Layout"), importBox));
    importRow->addWidget(m_layout);
    importRow->addStretch(1);
    importRow->addWidget(importButton);
    importLayout->addLayout(importRow);
    m_importSummary =
        new QLabel(tr("JSONL or a JSON array; bad rows are listed below."), importBox);
    m_importSummary->setWordWrap(true);
    importLayout->addWidget(m_importSummary);
    m_rejections = makeTable({tr("Line"), tr("Reason")}, importBox);
    m_rejections->setColumnWidth(0, 160);
    importLayout->addWidget(m_rejections, 1);
    layout->addWidget(importBox, 2);
    return side;
}

void PairsView::buildShortcuts()
{
    auto add = [this](const QKeySequence& key, auto slot) {
        auto* s = new QShortcut(key, this);
        s->setContext(Qt::WidgetWithChildrenShortcut);
        connect(s, &QShortcut::activated, this, slot);
    };
    add(QKeySequence(Qt::Key_A), [this] { choose(QStringLiteral("a")); });
    add(QKeySequence(Qt::Key_B), [this] { choose(QStringLiteral("b")); });
    add(QKeySequence(Qt::Key_T), [this] { choose(QStringLiteral("tie")); });
    add(QKeySequence(Qt::Key_S), [this] { choose(QStringLiteral("skip")); });
    add(QKeySequence(Qt::Key_W), [this] { swapCurrent(); });
    add(QKeySequence(Qt::Key_E), [this] { editAnswer(0); });
    add(QKeySequence(QKeySequence::Undo), [this] { undoLast(); });
}

bool PairsView::eventFilter(QObject* watched, QEvent* event)
{
    for (int side = 0; side < 2; ++side) {
        if (watched == m_answer[side]->viewport() && event->type() == QEvent::MouseButtonDblClick &&
            m_editSide != side) {
            editAnswer(side);
            return true;
        }
        if (watched == m_answer[side] && event->type() == QEvent::KeyPress && m_editSide == side) {
            const auto* key = static_cast<QKeyEvent*>(event);
            if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) &&
                key->modifiers().testFlag(Qt::ControlModifier)) {
                saveEdit();
                return true;
            }
            if (key->key() == Qt::Key_Escape) {
                cancelEdit();
                return true;
            }
        }
    }
    return QWidget::eventFilter(watched, event);
}

DataStore* PairsView::store() const
{
    return m_ctx.store ? m_ctx.store() : nullptr;
}

void PairsView::message(const QString& text) const
{
    if (m_ctx.message)
        m_ctx.message(text);
}

void PairsView::setStore(const DataStore* store)
{
    cancelEdit();  // the answer box read-only again (the Data page saved what was typed first)
    m_undo.clear();
    m_reselect = 0;
    m_model->setStore(store);
    if (store)
        refreshAgreement();
    else
        showAgreement({}, {});
}

void PairsView::setAnnotator(const QString& name)
{
    m_model->setAnnotator(name);
}

void PairsView::refresh()
{
    m_reselect = currentPairId();
    m_model->refresh();
    refreshAgreement();
}

void PairsView::afterIds()
{
    m_count->setText(tr("%n pair(s)", nullptr, m_model->rowCount()));
    const int row = m_reselect > 0 ? m_model->rowOf(m_reselect) : -1;
    m_reselect = 0;
    m_reselecting = true;  // the same pair again is not a move: an edit in progress stays
    if (m_model->rowCount() > 0)
        selectRow(row >= 0 ? row : 0);
    else
        showCurrent();
    m_reselecting = false;
}

void PairsView::selectRow(int row)
{
    if (row < 0 || row >= m_model->rowCount())
        return;
    const QModelIndex index = m_model->index(row, PairTableModel::ColId);
    m_table->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect |
                                                          QItemSelectionModel::Rows);
    m_table->scrollTo(index);
}

bool PairsView::selectPair(qint64 pairId)
{
    const int row = m_model->rowOf(pairId);
    if (row < 0)
        return false;
    selectRow(row);
    return true;
}

qint64 PairsView::currentPairId() const
{
    const QModelIndex current = m_table->currentIndex();
    return current.isValid() ? m_model->idAt(current.row()) : 0;
}

void PairsView::showCurrent()
{
    if (m_editSide >= 0) {
        const qint64 pair = m_editPair;
        if (m_reselecting && currentPairId() == pair)
            return;  // the table read again, or a move refused: what is being typed stays
        if (currentPairId() != pair && editChanged()) {
            // A move away from typed text goes back to it: Ctrl+Enter saves it, Esc drops it.
            QTimer::singleShot(0, this, [this, pair] {
                if (m_editSide >= 0 && currentPairId() != pair) {
                    m_reselecting = true;
                    selectPair(pair);
                    m_reselecting = false;
                }
            });
            message(tr("Pair %1 has an unsaved edit: save it (Ctrl+Enter) or cancel it (Esc)")
                        .arg(pair));
            return;
        }
        cancelEdit();
    }
    const QModelIndex current = m_table->currentIndex();
    const StoredPair* p = current.isValid() ? m_model->pairAt(current.row()) : nullptr;
    m_prompt->setPlainText(p ? PairTableModel::promptText(p->pair) : QString());
    for (int side = 0; side < 2; ++side)
        m_answer[side]->setPlainText(p ? PairTableModel::answerText(*p, side) : QString());
}

bool PairsView::change(const QString& what,
                       const std::function<int64_t(DataStore&, int64_t, const std::string&)>& write)
{
    DataStore* s = store();
    const qint64 id = currentPairId();
    if (!s || id <= 0)
        return false;
    if (m_ctx.jobs->busy()) {
        message(tr("Wait for “%1” to finish").arg(m_ctx.jobs->current()));
        return false;
    }
    const QString who = m_ctx.who(true);
    if (who.isEmpty())
        return false;
    try {
        m_undo.push_back(write(*s, id, who.toStdString()));
    } catch (const std::exception& e) {
        message(QString::fromUtf8(e.what()));
        return false;
    }
    m_model->setAnnotator(who);
    m_model->refreshPair(id);
    message(tr("Pair %1: %2 by %3").arg(id).arg(what, who));
    refreshAgreement();
    return true;
}

bool PairsView::choose(const QString& choice)
{
    const std::string c = choice.toStdString();
    const bool done =
        change(tr("chose %1").arg(choice), [c](DataStore& s, int64_t id, const std::string& who) {
            return recordPairChoice(s, id, who, c);
        });
    if (!done)
        return false;
    const QModelIndex current = m_table->currentIndex();
    const int next = m_model->nextUnjudged(current.isValid() ? current.row() : -1);
    if (next >= 0)
        selectRow(next);
    else
        showCurrent();
    return true;
}

bool PairsView::swapCurrent()
{
    const bool done =
        change(tr("sides swapped"), [](DataStore& s, int64_t id, const std::string& who) {
            return swapPair(s, id, who);
        });
    if (done)
        showCurrent();
    return done;
}

bool PairsView::editAnswer(int side)
{
    if (side < 0 || side > 1 || currentPairId() <= 0 || !store())
        return false;
    if (m_editSide >= 0 && m_editSide != side)
        cancelEdit();
    m_editSide = side;
    m_editPair = currentPairId();
    m_answer[side]->setReadOnly(false);
    m_answer[side]->setTextInteractionFlags(Qt::TextEditorInteraction);
    m_answer[side]->setStyleSheet(QStringLiteral("QPlainTextEdit { border: 2px solid #2980b9; }"));
    m_answer[side]->setFocus(Qt::OtherFocusReason);
    m_save->setVisible(true);
    m_cancelEdit->setVisible(true);
    return true;
}

bool PairsView::editChanged() const
{
    if (m_editSide < 0)
        return false;
    const int row = m_model->rowOf(m_editPair);
    const StoredPair* p = row >= 0 ? m_model->pairAt(row) : nullptr;
    return !p || m_answer[m_editSide]->toPlainText() != PairTableModel::answerText(*p, m_editSide);
}

bool PairsView::cancelEdit()
{
    if (m_editSide < 0)
        return false;
    QPlainTextEdit* view = m_answer[m_editSide];
    view->setReadOnly(true);
    view->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    view->setStyleSheet(QString());
    m_editSide = -1;
    m_save->setVisible(false);
    m_cancelEdit->setVisible(false);
    showCurrent();
    m_table->setFocus(Qt::OtherFocusReason);
    return true;
}

bool PairsView::saveEdit()
{
    if (m_editSide < 0 || m_editPair != currentPairId())
        return false;
    const StoredPair* p = m_model->pairAt(m_table->currentIndex().row());
    if (!p)
        return false;
    const std::string side = PairTableModel::storedSide(*p, m_editSide);
    const std::string text = m_answer[m_editSide]->toPlainText().toStdString();
    if (QString::fromStdString(text) == PairTableModel::answerText(*p, m_editSide)) {
        cancelEdit();  // nothing changed: no operation
        return false;
    }
    const bool done = change(tr("%1 answer edited").arg(QString::fromStdString(side)),
                             [side, text](DataStore& s, int64_t id, const std::string& who) {
                                 return editPairAnswer(s, id, side, text, who);
                             });
    if (done)
        cancelEdit();
    return done;
}

bool PairsView::undoLast()
{
    DataStore* s = store();
    if (!s || m_undo.empty())
        return false;
    if (m_ctx.jobs->busy()) {  // a job holds the write lock: the undo would wait for it
        message(tr("Wait for “%1” to finish").arg(m_ctx.jobs->current()));
        return false;
    }
    const QString who = m_ctx.who(true);
    if (who.isEmpty())
        return false;
    const int64_t op = m_undo.back();
    try {
        s->undo(op, who.toStdString());
    } catch (const std::exception& e) {
        message(QString::fromUtf8(e.what()));
        return false;
    }
    m_undo.pop_back();
    message(tr("Undid operation %1").arg(op));
    refresh();  // which pairs an undo touched is the store's business: read them all again
    return true;
}

bool PairsView::adjudicate(const QString& choice)
{
    const std::string c = choice.toStdString();
    return change(tr("adjudicated %1").arg(choice),
                  [c](DataStore& s, int64_t id, const std::string& who) {
                      return adjudicatePair(s, id, c, who);
                  });
}

void PairsView::refreshAgreement()
{
    const int generation = ++m_generation;
    m_ctx.jobs->read(this, [this, generation](DataStore& s, const CurateProgress&) {
        std::vector<PairAgreement> rows = pairChoiceAgreement(s);
        std::vector<int64_t> disputed = disputedPairs(s);
        return DataJobs::Finish(
            [this, generation, rows = std::move(rows), disputed = std::move(disputed)] {
                if (generation == m_generation)  // else a newer refresh is on its way
                    showAgreement(rows, disputed);
            });
    });
}

void PairsView::showAgreement(const std::vector<PairAgreement>& rows,
                              const std::vector<int64_t>& disputed)
{
    m_agreementRows = rows;
    m_agreement->setRowCount(int(rows.size()));
    for (int i = 0; i < int(rows.size()); ++i) {
        const PairAgreement& p = rows[size_t(i)];
        m_agreement->setItem(
            i, 0,
            new QTableWidgetItem(QStringLiteral("%1 – %2").arg(
                QString::fromStdString(p.annotatorA), QString::fromStdString(p.annotatorB))));
        m_agreement->setItem(i, 1, numberItem(double(p.items)));
        m_agreement->setItem(i, 2, numberItem(double(p.agreed)));
        m_agreement->setItem(i, 3, numberItem(p.percent, 1));
        m_agreement->setItem(i, 4, numberItem(p.kappa, 3));
    }
    const QSignalBlocker block(m_disputed);  // refilling the list must not move the selection
    m_disputed->clear();
    for (const int64_t id : disputed) {
        auto* item = new QListWidgetItem(tr("Pair %1").arg(id), m_disputed);
        item->setData(Qt::UserRole, qint64(id));
    }
    Q_EMIT agreementRefreshed();
}

void PairsView::openImport()
{
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Import preference pairs"), QString(),
                                     tr("Pair files (*.jsonl *.json);;All files (*)"));
    if (!path.isEmpty())
        importFile(path, PairLayout(m_layout->currentData().toInt()));
}

bool PairsView::importFile(const QString& path, PairLayout layout)
{
    if (!store())
        return false;
    const QString whoName = m_ctx.who(false);
    const std::string who = whoName.isEmpty() ? "studio" : whoName.toStdString();
    const std::string file = path.toStdString();
    m_importSummary->setText(tr("Importing %1…").arg(path));
    m_rejections->setRowCount(0);
    const bool started =
        m_ctx.jobs->run(tr("Import pairs"), [this, file, layout,
                                             who](DataStore& s, const CurateProgress& progress) {
            PairImportReport report;
            try {
                report = importPairs(s, file, layout, who, progress);
            } catch (const std::exception& e) {
                if (!progress("reading pairs", 0.0))  // Cancel: nothing stored, nothing to list
                    return DataJobs::Finish([this] {
                        m_importSummary->setText(tr("Import cancelled: nothing imported."));
                        throw Error("pairs import: cancelled");
                    });
                // Nothing was stored; a JSONL file's rows are read again to list why.
                const bool jsonl = !QString::fromStdString(file).endsWith(QLatin1String(".json"));
                size_t total = 0;
                const std::vector<PairRejection> rejected =
                    jsonl ? jsonlRejections(file, layout, total) : std::vector<PairRejection>{};
                const QString error = QString::fromUtf8(e.what());
                return DataJobs::Finish([this, error, rejected, total] {
                    m_importSummary->setText(tr("Nothing imported: %1").arg(error));
                    fillRejections(m_rejections, rejected, total);
                    Q_EMIT imported(0, int(total));
                    throw Error(error.toStdString());
                });
            }
            progress("storing pairs", 1.0);
            return DataJobs::Finish([this, report] {
                m_importSummary->setText(
                    tr("Imported %1 pairs, %2 rows rejected (operation %3; Undo last or the "
                       "History tab takes them out again).")
                        .arg(report.imported)
                        .arg(report.rejected.size())
                        .arg(report.operationId));
                fillRejections(m_rejections, report.rejected);
                Q_EMIT imported(report.imported, int(report.rejected.size()));
            });
        });
    if (!started)
        m_importSummary->setText(tr("Wait for “%1” to finish").arg(m_ctx.jobs->current()));
    return started;
}

}  // namespace tb
