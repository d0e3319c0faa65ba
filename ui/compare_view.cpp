// CompareView: the judging tab (prompt, two unlabelled answers, note, 1/2/3) and the summary tab
// over data/curate/comparison.h.
#include "compare_view.h"

#include "data/curate/comparison.h"
#include "data/store/store.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <exception>

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

QString percent(double share)
{
    return QString::number(100.0 * share, 'f', 1) + QLatin1Char('%');
}

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent)
{
    setFocusPolicy(Qt::StrongFocus);
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout();
    m_sets = new QComboBox(this);
    m_sets->setObjectName(QStringLiteral("compareSet"));
    m_sets->setMinimumContentsLength(16);
    m_annotator = new QLineEdit(this);
    m_annotator->setObjectName(QStringLiteral("compareAnnotator"));
    m_annotator->setPlaceholderText(tr("your name"));
    m_progress = new QLabel(this);
    m_progress->setObjectName(QStringLiteral("compareProgress"));
    top->addWidget(new QLabel(tr("Comparison set"), this));
    top->addWidget(m_sets);
    top->addSpacing(12);
    top->addWidget(new QLabel(tr("Annotator"), this));
    top->addWidget(m_annotator);
    top->addStretch(1);
    top->addWidget(m_progress);
    layout->addLayout(top);
    m_tabs = new QTabWidget(this);
    m_tabs->addTab(buildJudgeTab(), tr("Judge"));
    m_tabs->addTab(buildSummaryTab(), tr("Summary"));
    m_tabs->setTabToolTip(1, tr("Opens once you have judged every item of the set, so the "
                                "sources stay hidden while you judge"));
    layout->addWidget(m_tabs, 1);
    m_message = new QLabel(this);
    m_message->setWordWrap(true);
    layout->addWidget(m_message);

    connect(m_sets, &QComboBox::currentIndexChanged, this, [this] {
        m_judged.clear();
        showNext();
    });
    connect(m_annotator, &QLineEdit::editingFinished, this, [this] {
        m_judged.clear();
        showNext();
    });
    connect(m_tabs, &QTabWidget::currentChanged, this, [this](int tab) {
        if (tab == 1)
            updateSummary();
    });
    // Digits typed into the note or the name go there (line edits take them before shortcuts).
    const auto add = [this](int key, const QString& choice) {
        auto* s = new QShortcut(QKeySequence(key), this);
        s->setContext(Qt::WidgetWithChildrenShortcut);
        connect(s, &QShortcut::activated, this, [this, choice] { judge(choice); });
    };
    add(Qt::Key_1, QStringLiteral("a"));
    add(Qt::Key_2, QStringLiteral("b"));
    add(Qt::Key_3, QStringLiteral("tie"));
    showItem(std::nullopt);
}

QWidget* CompareView::buildJudgeTab()
{
    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    auto* promptBox = new QGroupBox(tr("Prompt"), page);
    auto* promptLayout = new QVBoxLayout(promptBox);
    m_prompt = makeTextView(QStringLiteral("comparePrompt"), promptBox);
    m_prompt->setMaximumHeight(m_prompt->fontMetrics().lineSpacing() * 8 + 12);
    promptLayout->addWidget(m_prompt);
    layout->addWidget(promptBox);
    auto* answers = new QSplitter(Qt::Horizontal, page);
    const auto answerBox = [&](const QString& title, const QString& name) {
        auto* box = new QGroupBox(title, answers);
        auto* boxLayout = new QVBoxLayout(box);
        QPlainTextEdit* view = makeTextView(name, box);
        boxLayout->addWidget(view);
        answers->addWidget(box);
        return view;
    };
    m_answerA = answerBox(tr("Answer A"), QStringLiteral("compareAnswerA"));
    m_answerB = answerBox(tr("Answer B"), QStringLiteral("compareAnswerB"));
    layout->addWidget(answers, 1);
    m_previous = new QLabel(page);
    layout->addWidget(m_previous);
    m_note = new QLineEdit(page);
    m_note->setObjectName(QStringLiteral("compareNote"));
    m_note->setPlaceholderText(tr("Note (optional; Enter returns to the 1/2/3 keys)"));
    connect(m_note, &QLineEdit::returnPressed, this, [this] { setFocus(Qt::ShortcutFocusReason); });
    layout->addWidget(m_note);
    auto* buttons = new QHBoxLayout();
    m_back = new QPushButton(tr("Back"), page);
    m_back->setToolTip(tr("Show the item you judged before this one; judging it again replaces "
                          "your verdict"));
    m_pickA = new QPushButton(tr("A is better (1)"), page);
    m_pickB = new QPushButton(tr("B is better (2)"), page);
    m_tie = new QPushButton(tr("Tie (3)"), page);
    m_back->setObjectName(QStringLiteral("compareBack"));
    m_pickA->setObjectName(QStringLiteral("comparePickA"));
    m_pickB->setObjectName(QStringLiteral("comparePickB"));
    m_tie->setObjectName(QStringLiteral("compareTie"));
    buttons->addWidget(m_back);
    buttons->addStretch(1);
    buttons->addWidget(m_pickA);
    buttons->addWidget(m_pickB);
    buttons->addWidget(m_tie);
    layout->addLayout(buttons);
    connect(m_back, &QPushButton::clicked, this, [this] { back(); });
    connect(m_pickA, &QPushButton::clicked, this, [this] { judge(QStringLiteral("a")); });
    connect(m_pickB, &QPushButton::clicked, this, [this] { judge(QStringLiteral("b")); });
    connect(m_tie, &QPushButton::clicked, this, [this] { judge(QStringLiteral("tie")); });
    return page;
}

QWidget* CompareView::buildSummaryTab()
{
    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    m_summary = new QLabel(page);
    m_summary->setObjectName(QStringLiteral("compareSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);
    m_verdicts = new QTableWidget(0, 3, page);
    m_verdicts->setObjectName(QStringLiteral("compareVerdicts"));
    m_verdicts->setHorizontalHeaderLabels({tr("Prompt"), tr("Verdicts"), tr("Majority")});
    m_verdicts->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_verdicts->verticalHeader()->setVisible(false);
    m_verdicts->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_verdicts->setAlternatingRowColors(true);
    layout->addWidget(m_verdicts, 1);
    return page;
}

void CompareView::setStore(DataStore* store)
{
    m_store = store;
    m_judged.clear();
    refresh();
}

void CompareView::refresh()
{
    const QString current = m_sets->currentText();
    {
        const QSignalBlocker block(m_sets);
        m_sets->clear();
        if (m_store) {
            try {
                for (const std::string& name : comparisonSets(*m_store))
                    m_sets->addItem(QString::fromStdString(name));
            } catch (const std::exception& e) {
                setMessage(QString::fromUtf8(e.what()), true);
            }
        }
        const int index = m_sets->findText(current);
        m_sets->setCurrentIndex(index >= 0 ? index : 0);
    }
    showNext();
}

void CompareView::setSet(const QString& name)
{
    const int index = m_sets->findText(name);
    if (index >= 0)
        m_sets->setCurrentIndex(index);
}

QString CompareView::set() const
{
    return m_sets->currentText();
}

void CompareView::setAnnotator(const QString& name)
{
    m_annotator->setText(name);
    m_judged.clear();
    showNext();
}

QString CompareView::annotator() const
{
    return m_annotator->text().trimmed();
}

QString CompareView::message() const
{
    return m_message->text();
}

void CompareView::setMessage(const QString& text, bool error)
{
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("color:#c0392b") : QString());
}

void CompareView::showItem(const std::optional<BlindItem>& item)
{
    m_item = item;
    const bool shown = item.has_value();
    m_pickA->setEnabled(shown);
    m_pickB->setEnabled(shown);
    m_tie->setEnabled(shown);
    const bool revisit = shown && !m_judged.empty() && m_judged.back() == item->id;
    m_back->setEnabled(m_judged.size() > (revisit ? 1u : 0u));
    m_note->clear();
    m_previous->clear();
    if (!shown) {
        m_answerA->clear();
        m_answerB->clear();
        m_prompt->setPlainText(!m_store || set().isEmpty() ? tr("No comparison set in this store")
                               : annotator().isEmpty()     ? tr("Enter your name to start")
                                                           : tr("You have judged every item"));
        return;
    }
    m_prompt->setPlainText(QString::fromStdString(item->prompt));
    m_answerA->setPlainText(QString::fromStdString(item->answerA));
    m_answerB->setPlainText(QString::fromStdString(item->answerB));
    if (m_store && !annotator().isEmpty()) {
        if (const auto v = verdictOf(*m_store, item->id, annotator().toStdString())) {
            const QString choice = v->choice == "tie" ? tr("tie")
                                   : v->choice == "a" ? tr("A is better")
                                                      : tr("B is better");
            m_previous->setText(tr("Your verdict: %1").arg(choice));
            m_note->setText(QString::fromStdString(v->note));
        }
    }
}

void CompareView::showNext()
{
    std::optional<BlindItem> next;
    if (m_store && !set().isEmpty() && !annotator().isEmpty()) {
        try {
            next = nextUnjudged(*m_store, set().toStdString(), annotator().toStdString());
        } catch (const std::exception& e) {
            setMessage(QString::fromUtf8(e.what()), true);
        }
    }
    showItem(next);
    updateProgress();
}

void CompareView::updateProgress()
{
    ComparisonProgress p;
    if (m_store && !set().isEmpty()) {
        try {
            p = comparisonProgress(*m_store, set().toStdString(), annotator().toStdString());
        } catch (const std::exception& e) {
            setMessage(QString::fromUtf8(e.what()), true);
        }
    }
    m_progress->setText(p.total > 0 ? tr("%1 of %2 judged").arg(p.judged).arg(p.total) : QString());
    const bool done = p.total > 0 && p.judged == p.total && !annotator().isEmpty();
    m_tabs->setTabEnabled(1, done);
    if (done && m_tabs->currentIndex() == 1)
        updateSummary();
}

bool CompareView::judge(const QString& choice)
{
    if (!m_store || !m_item) {
        setMessage(tr("Nothing to judge"));
        return false;
    }
    const QString who = annotator();
    if (who.isEmpty()) {
        setMessage(tr("Enter your name first"), true);
        m_annotator->setFocus(Qt::OtherFocusReason);
        return false;
    }
    const qint64 id = m_item->id;
    try {
        recordVerdict(*m_store, id, who.toStdString(), choice.toStdString(),
                      m_note->text().trimmed().toStdString());
    } catch (const std::exception& e) {
        const QString why = QString::fromUtf8(e.what());
        setMessage(why.contains(QStringLiteral("database is locked"))
                       ? tr("The store is busy with another job (the Data page's); the verdict "
                            "was not recorded: choose again when it finishes")
                       : why,
                   true);
        return false;
    }
    if (m_judged.empty() || m_judged.back() != id)
        m_judged.push_back(id);
    setMessage(tr("Verdict recorded"));
    Q_EMIT judged(id, choice);
    if (m_note->hasFocus())
        setFocus(Qt::OtherFocusReason);
    showNext();
    if (!m_item && m_tabs->isTabEnabled(1)) {
        setMessage(tr("Every item judged: the summary shows the sources"));
        m_tabs->setCurrentIndex(1);
    }
    return true;
}

bool CompareView::back()
{
    // The trail holds this session's judged items; a revisited one on screen is its last entry.
    if (m_item && !m_judged.empty() && m_judged.back() == m_item->id)
        m_judged.pop_back();
    if (!m_store || m_judged.empty())
        return false;
    const qint64 id = m_judged.back();
    try {
        const BlindItem item = blindItem(*m_store, id);
        m_tabs->setCurrentIndex(0);
        showItem(item);
    } catch (const std::exception& e) {
        setMessage(QString::fromUtf8(e.what()), true);
        return false;
    }
    return true;
}

void CompareView::updateSummary()
{
    m_verdicts->setRowCount(0);
    if (!m_store || set().isEmpty()) {
        m_summary->clear();
        return;
    }
    ComparisonSummary s;
    try {
        s = summarizeComparison(*m_store, set().toStdString());
    } catch (const std::exception& e) {
        m_summary->setText(QString::fromUtf8(e.what()).toHtmlEscaped());
        return;
    }
    QStringList lines;
    for (const WinRate& w : s.winRates)
        // One arg() call: a label holding "%1" is not read as a placeholder.
        lines << tr("<b>%1</b> over <b>%2</b>: %3 (95% Wilson interval %4 to %5), %6 verdicts: "
                    "%7 won, %8 lost, %9 tied")
                     .arg(QString::fromStdString(w.sourceY).toHtmlEscaped(),
                          QString::fromStdString(w.sourceX).toHtmlEscaped(), percent(w.rate),
                          percent(w.interval.lo), percent(w.interval.hi),
                          QString::number(w.verdicts), QString::number(w.winsY),
                          QString::number(w.winsX), QString::number(w.ties));
    if (s.winRates.empty())
        lines << tr("No verdicts yet");
    for (const PairAgreement& a : s.agreement)
        lines << tr("%1 and %2: Cohen's kappa %3 over %4 items (%5 agreed)")
                     .arg(QString::fromStdString(a.annotatorA).toHtmlEscaped(),
                          QString::fromStdString(a.annotatorB).toHtmlEscaped(),
                          QString::number(a.kappa, 'f', 3), QString::number(a.items),
                          percent(a.percent / 100.0));
    if (s.agreement.empty())
        lines << tr("Agreement needs two annotators on the same items");
    m_summary->setText(lines.join(QStringLiteral("<br>")));

    m_verdicts->setRowCount(int(s.prompts.size()));
    for (int row = 0; row < int(s.prompts.size()); ++row) {
        const PromptVerdicts& p = s.prompts[size_t(row)];
        const auto source = [&](const std::string& outcome) {
            return outcome == "x"    ? QString::fromStdString(p.sourceX)
                   : outcome == "y"  ? QString::fromStdString(p.sourceY)
                   : outcome.empty() ? tr("none")
                                     : tr("tie");
        };
        QStringList verdicts;
        for (const auto& [annotator, outcome] : p.outcomes)
            verdicts << QString::fromStdString(annotator) + QStringLiteral(": ") + source(outcome);
        m_verdicts->setItem(row, 0,
                            new QTableWidgetItem(QString::fromStdString(p.prompt).simplified()));
        m_verdicts->setItem(row, 1, new QTableWidgetItem(verdicts.join(QStringLiteral(", "))));
        m_verdicts->setItem(row, 2, new QTableWidgetItem(source(p.majority)));
    }
}

}  // namespace tb
