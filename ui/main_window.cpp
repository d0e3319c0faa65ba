// Main window: sidebar navigation between pages, project menu, status bar, close-during-training.
#include "main_window.h"

#include "data_jobs.h"
#include "data_page.h"
#include "evaluate_page.h"
#include "export_page.h"
#include "memory_page.h"
#include "method_page.h"
#include "model_page.h"
#include "playground_page.h"
#include "project.h"
#include "studio_state.h"
#include "train_page.h"
#include "training_controller.h"

#include "memory/estimator.h"
#include "memory/measure.h"
#include "model/model.h"

#include <QApplication>
#include <QCloseEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>

// Q_INIT_RESOURCE must be called outside a namespace; tb_ui is a static library, so the resource's
// object is kept only when something references it.
static void initStudioResources()
{
    Q_INIT_RESOURCE(tunebench);
}

namespace tb {

QIcon appIcon()
{
    initStudioResources();
    QIcon icon;
    for (int size : {16, 22, 24, 32, 48, 64, 128, 256})
        icon.addFile(QStringLiteral(":/tunebench/icons/tunebench-%1.png").arg(size),
                     QSize(size, size));
    return icon;
}

StartupFile startupFileKind(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QStringLiteral("tunebench"))
        return StartupFile::Project;
    if (suffix == QStringLiteral("tbstore"))
        return StartupFile::Store;
    return StartupFile::Model;
}

namespace {
const char* const kPages[] = {"Model", "Data",       "Method",   "Memory",
                              "Train", "Playground", "Evaluate", "Export"};
const int kMaxRecent = 8;
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowIcon(appIcon());
    m_state = new StudioState(this);
    m_controller = new TrainingController(m_state, this);
    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    m_sidebar = new QListWidget(central);
    m_sidebar->setFixedWidth(150);
    m_sidebar->setSpacing(2);
    QFont sideFont = m_sidebar->font();
    sideFont.setPointSizeF(sideFont.pointSizeF() * 1.1);
    m_sidebar->setFont(sideFont);
    m_pages = new QStackedWidget(central);
    layout->addWidget(m_sidebar);
    layout->addWidget(m_pages, 1);
    setCentralWidget(central);

    m_modelPage = new ModelPage(m_state, m_pages);
    m_dataPage = new DataPage(m_state, m_pages);
    m_methodPage = new MethodPage(m_state, m_pages);
    m_memoryPage = new MemoryPage(m_state, m_pages);
    m_trainPage = new TrainPage(m_state, m_controller, m_pages);
    m_playgroundPage = new PlaygroundPage(m_state, m_pages);
    m_evaluatePage = new EvaluatePage(m_state, m_pages);
    m_exportPage = new ExportPage(m_state, m_pages);
    for (const char* name : kPages) {
        m_sidebar->addItem(tr(name));
        const QLatin1String n(name);
        QWidget* page = nullptr;
        const std::pair<const char*, QWidget*> known[] = {
            {"Model", m_modelPage},       {"Method", m_methodPage},
            {"Data", m_dataPage},         {"Memory", m_memoryPage},
            {"Train", m_trainPage},       {"Playground", m_playgroundPage},
            {"Evaluate", m_evaluatePage}, {"Export", m_exportPage}};
        for (const auto& [key, widget] : known)
            if (n == QLatin1String(key))
                page = widget;
        if (!page) {
            auto* placeholder =
                new QLabel(tr("The %1 page arrives with the dataset store.\nTraining uses the "
                              "files set on the Train page.")
                               .arg(tr(name)),
                           m_pages);
            placeholder->setAlignment(Qt::AlignCenter);
            page = placeholder;
        }
        m_pages->addWidget(page);
    }
    connect(m_sidebar, &QListWidget::currentRowChanged, m_pages, &QStackedWidget::setCurrentIndex);
    m_sidebar->setCurrentRow(0);

    connect(m_modelPage, &ModelPage::modelOpened, this, [this](const ModelSummary& s) {
        m_state->setModel(s.path, s.error.isEmpty() ? s.config : std::nullopt, s.ownChatTemplate,
                          s.missing);
        if (!m_state->modelNote().isEmpty())
            statusBar()->showMessage(m_state->modelNote(), 30000);
    });
    // A catalog model chosen on the Memory page opens like any other (on the Model page's worker).
    connect(m_memoryPage, &MemoryPage::modelRequested, m_modelPage, &ModelPage::openModel);
    connect(m_evaluatePage, &EvaluatePage::showRecordRequested, this, [this](qint64 id) {
        showPage(tr("Data"));
        m_dataPage->showRecord(id);
    });
    connect(m_controller, &TrainingController::eventsArrived, m_memoryPage,
            [this](const JobEventBatch& b) {
                if (!b.memoryReports.empty())
                    m_memoryPage->showMeasured(b.memoryReports.back());
            });
    connect(m_controller, &TrainingController::ended, this, [this] {
        if (m_closeAfterStop)
            close();
    });
    connect(m_exportPage, &ExportPage::exportFinished, this, [this] {
        if (m_closeAfterExport)
            close();
    });

    const QString device = QString::fromStdString(defaultDevice());
    m_device = new QLabel(tr("Device: %1").arg(device), this);
    m_memory = new QLabel(this);
    m_job = new QLabel(jobStateName(m_state->jobState()), this);
    m_job->setMinimumWidth(80);
    statusBar()->addPermanentWidget(m_device);
    statusBar()->addPermanentWidget(m_memory);
    statusBar()->addPermanentWidget(m_job);
    connect(m_state, &StudioState::jobStateChanged, this,
            [this](StudioJobState s) { m_job->setText(jobStateName(s)); });
    connect(m_state, &StudioState::memoryNowChanged, this,
            [this](qint64 bytes, const QString& source) {
                m_memory->setText(
                    tr("Memory: %1 (%2)").arg(QString::fromStdString(formatBytes(bytes)), source));
            });
    // Between runs, the process's tensor memory as core measures it (CUDA allocated, or tracked
    // CPU).
    installCpuMemoryTracking();
    auto pollMemory = [this, device] {
        if (m_controller->active())
            return;
        const MemorySnapshot s = memorySnapshot(device.toStdString());
        m_state->setMemoryNow(s.current, QString::fromStdString(s.source));
    };
    auto* poll = new QTimer(this);
    connect(poll, &QTimer::timeout, this, pollMemory);
    poll->start(2000);
    pollMemory();

    buildMenus();
    updateTitle();
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    if (!settings.contains(QStringLiteral("window/geometry")))
        resize(1280, 800);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&Project"));
    file->addAction(tr("&Open…"), QKeySequence::Open, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open project"), QString(),
                                                          tr("Tunebench projects (*.tunebench)"));
        QString error;
        if (!path.isEmpty() && !openProject(path, &error))
            QMessageBox::warning(this, tr("Open project"), error);
    });
    m_recent = file->addMenu(tr("Open &recent"));
    file->addAction(tr("&Save"), QKeySequence::Save, this, [this] {
        QString path = m_projectPath;
        if (path.isEmpty())
            path = QFileDialog::getSaveFileName(this, tr("Save project"),
                                                QStringLiteral("project.tunebench"),
                                                tr("Tunebench projects (*.tunebench)"));
        QString error;
        if (!path.isEmpty() && !saveProject(path, &error))
            QMessageBox::warning(this, tr("Save project"), error);
    });
    file->addAction(tr("Save &as…"), QKeySequence::SaveAs, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save project"),
                                                          QStringLiteral("project.tunebench"),
                                                          tr("Tunebench projects (*.tunebench)"));
        QString error;
        if (!path.isEmpty() && !saveProject(path, &error))
            QMessageBox::warning(this, tr("Save project"), error);
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Tunebench Studio"), this, [this] {
        QMessageBox* box = createAboutBox();
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
    });
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu()
{
    m_recent->clear();
    const QStringList recent = QSettings().value(QStringLiteral("projects/recent")).toStringList();
    for (const QString& path : recent)
        m_recent
            ->addAction(QFileInfo(path).fileName(), this,
                        [this, path] {
                            QString error;
                            if (!openProject(path, &error))
                                QMessageBox::warning(this, tr("Open project"), error);
                        })
            ->setToolTip(path);
    m_recent->setEnabled(!recent.isEmpty());
}

void MainWindow::rememberRecent(const QString& path)
{
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("projects/recent")).toStringList();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    recent.removeAll(absolute);
    recent.prepend(absolute);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    settings.setValue(QStringLiteral("projects/recent"), recent);
    rebuildRecentMenu();
}

bool MainWindow::openProject(const QString& path, QString* error)
{
    Project p;
    if (!readProject(path, &p, error))
        return false;
    TrainConfig c = p.config;
    // The project's choices were made for its model: opening it below keeps them.
    if (!p.modelPath.isEmpty())
        c.model = p.modelPath.toStdString();
    if (!p.trainFile.isEmpty())
        c.data.trainFile = p.trainFile.toStdString();
    c.data.valFile = p.valFile.toStdString();
    if (!p.storePath.isEmpty())
        m_state->setStorePath(p.storePath);  // the Data page opens it
    m_state->setConfig(c);
    m_state->setRuns(p.runs);
    if (!p.modelPath.isEmpty())
        m_modelPage->openModel(p.modelPath);
    m_projectPath = path;
    rememberRecent(path);
    updateTitle();
    return true;
}

bool MainWindow::openPath(const QString& path, QString* error)
{
    switch (startupFileKind(path)) {
    case StartupFile::Project:
        return openProject(path, error);
    case StartupFile::Store:
        if (!QFileInfo(path).isFile()) {
            if (error)
                *error = tr("%1: no such dataset store").arg(path);
            return false;
        }
        if (!m_dataPage->openStore(QFileInfo(path).absoluteFilePath(), false, error))
            return false;
        showPage(tr("Data"));
        return true;
    case StartupFile::Model:
        break;
    }
    m_modelPage->openModel(path);
    return true;
}

QMessageBox* MainWindow::createAboutBox()
{
    auto* box = new QMessageBox(this);
    box->setWindowTitle(tr("About Tunebench Studio"));
    box->setIconPixmap(appIcon().pixmap(64, 64));
    box->setTextFormat(Qt::RichText);
    box->setText(tr("<h3>Tunebench Studio %1</h3>"
                    "<p>A workbench for fine-tuning language models: data, methods, memory, "
                    "training, evaluation and export.</p>"
                    "<p>The command-line tool is <tt>tunebench</tt>.</p>")
                     .arg(QApplication::applicationVersion()));
    box->setStandardButtons(QMessageBox::Ok);
    return box;
}

bool MainWindow::saveProject(const QString& path, QString* error)
{
    Project p;
    p.modelPath = m_state->modelPath();
    p.config = m_state->config();
    p.trainFile = QString::fromStdString(p.config.data.trainFile);
    p.valFile = QString::fromStdString(p.config.data.valFile);
    p.storePath = m_state->storePath();
    p.runs = m_state->runs();
    if (!writeProject(path, p, error))
        return false;
    m_projectPath = path;
    rememberRecent(path);
    updateTitle();
    return true;
}

void MainWindow::updateTitle()
{
    setWindowTitle(m_projectPath.isEmpty()
                       ? tr("Tunebench Studio")
                       : tr("%1 — Tunebench Studio").arg(QFileInfo(m_projectPath).fileName()));
}

QStringList MainWindow::pageNames() const
{
    QStringList names;
    for (int i = 0; i < m_sidebar->count(); ++i)
        names << m_sidebar->item(i)->text();
    return names;
}

void MainWindow::showPage(const QString& name)
{
    const int row = pageNames().indexOf(name);
    if (row >= 0)
        m_sidebar->setCurrentRow(row);
}

QString MainWindow::statusText() const
{
    return m_device->text() + QStringLiteral(" | ") + m_memory->text() + QStringLiteral(" | ") +
           m_job->text();
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    // Every question first, nothing done before the last answer: a Cancel or a No leaves the
    // edits, the run and the jobs as they were, and the next close starts afresh. Discard then
    // drops the edits at once (edits typed while the close waits are asked about); Save waits
    // until nothing else runs (a Data job holds the store a save writes to).
    const auto abandon = [this, event] {
        m_closeEdits = 0;
        m_closeAfterStop = false;
        m_closeAfterExport = false;
        event->ignore();
    };
    int edits = m_closeEdits;
    if (m_closeEdits <= 0 && m_dataPage->hasUnsavedEdits()) {
        // A record's fields or a pair's answer typed and not saved: saved, dropped or kept open,
        // as the user says; never lost without a word.
        edits = m_askUnsaved ? m_askUnsaved()
                             : QMessageBox::question(
                                   this, tr("Unsaved edits"),
                                   tr("The Data page has edits that are not saved. Save them "
                                      "before closing?"),
                                   QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel,
                                   QMessageBox::Save);
        if (edits != QMessageBox::Save && edits != QMessageBox::Discard) {
            showPage(tr("Data"));
            abandon();
            return;
        }
    }
    if (m_controller->active() && !m_closeAfterStop) {
        const bool stop =
            m_askClose
                ? m_askClose()
                : QMessageBox::question(this, tr("Training in progress"),
                                        tr("A run is in progress. Stop it (its last "
                                           "checkpoint is saved) and close?")) == QMessageBox::Yes;
        if (!stop) {
            abandon();
            return;
        }
        m_closeAfterStop = true;
        m_controller->stop();
        statusBar()->showMessage(tr("Stopping the run before closing…"));
    }
    if (edits == QMessageBox::Discard) {
        m_dataPage->discardEdits();
        edits = -1;
    }
    m_closeEdits = edits > 0 ? edits : -1;  // Save, or -1: nothing (more) to ask
    if (m_controller->active()) {
        event->ignore();  // closes again when the job has ended and freed its memory
        return;
    }
    // An export cannot stop halfway (its folder appears whole or not at all): the window closes
    // when it is written, instead of the page's destructor holding the GUI thread until then.
    if (m_exportPage->busy()) {
        m_closeAfterExport = true;
        statusBar()->showMessage(tr("Closing when the export being written is complete…"));
        event->ignore();
        return;
    }
    // Generation, evaluation and data jobs stop at their next check (a token, a batch, a row):
    // the window stays, saying so, until they have, instead of hiding while the process holds
    // the device's memory and the store for as long as a batch or a model load takes.
    QStringList running;
    if (m_playgroundPage->busy()) {
        m_playgroundPage->cancel();
        running << tr("generation");
    }
    if (m_evaluatePage->busy()) {
        m_evaluatePage->cancel();
        running << tr("evaluation");
    }
    if (m_dataPage->jobs()->busy()) {
        m_dataPage->jobs()->cancel();
        running << m_dataPage->jobs()->current();
    }
    // A report being written finishes (it is a few files): closing waits for it.
    if (m_evaluatePage->writingReports())
        running << tr("the report being written");
    if (!running.isEmpty()) {
        statusBar()->showMessage(
            tr("Closing when %1 has stopped…").arg(running.join(QStringLiteral(", "))));
        QTimer::singleShot(100, this, [this] { close(); });  // asks again; closes once all stopped
        event->ignore();
        return;
    }
    // Nothing runs: the edits saved as answered.
    if (m_closeEdits == QMessageBox::Save && !m_dataPage->saveAllEdits()) {
        showPage(tr("Data"));  // where the edits are, and why saving them failed
        abandon();             // the next close asks again
        return;
    }
    m_closeEdits = 0;  // a window shown again starts afresh
    m_closeAfterStop = false;
    m_closeAfterExport = false;
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

}  // namespace tb
