// Train page: composes the settings form, the run panel and the run history, and wires them
// together.
#include "train_page.h"

#include "run_history.h"
#include "studio_state.h"
#include "train_plots.h"
#include "train_run_panel.h"
#include "train_settings_form.h"
#include "training_controller.h"

#include <QFrame>
#include <QHBoxLayout>
#include <QScrollArea>

namespace tb {

TrainPage::TrainPage(StudioState* state, TrainingController* controller, QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QHBoxLayout(this);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFixedWidth(330);
    scroll->setHorizontalScrollBarPolicy(
        Qt::ScrollBarAlwaysOff);  // the form fits the width; only scroll down
    scroll->setFrameShape(QFrame::NoFrame);
    m_form = new TrainSettingsForm(state, scroll);
    scroll->setWidget(m_form);
    layout->addWidget(scroll);
    m_panel = new TrainRunPanel(state, controller, this);
    layout->addWidget(m_panel, 1);
    m_history = new RunHistory(state, this);
    m_panel->addTab(m_history, tr("Run history (check to overlay)"));

    connect(m_panel, &TrainRunPanel::startRequested, this, [this] { startRun(); });
    connect(m_form, &TrainSettingsForm::message, m_panel, &TrainRunPanel::log);
    connect(m_history, &RunHistory::message, m_panel, &TrainRunPanel::log);
    connect(m_history, &RunHistory::overlaysChanged, m_panel->plots(), &TrainPlots::setOverlays);
    connect(controller, &TrainingController::ended, m_history, &RunHistory::refresh);
}

bool TrainPage::startRun()
{
    m_form->toState();
    return m_panel->startRun(m_form->runName());
}

TrainPlots* TrainPage::plots() const
{
    return m_panel->plots();
}
QPushButton* TrainPage::startButton() const
{
    return m_panel->startButton();
}
QPushButton* TrainPage::pauseButton() const
{
    return m_panel->pauseButton();
}
QPushButton* TrainPage::resumeButton() const
{
    return m_panel->resumeButton();
}
QPushButton* TrainPage::stopButton() const
{
    return m_panel->stopButton();
}
QListWidget* TrainPage::history() const
{
    return m_history;
}
QString TrainPage::bannerText() const
{
    return m_panel->bannerText();
}
QString TrainPage::logText() const
{
    return m_panel->logText();
}
void TrainPage::refreshHistory()
{
    m_history->refresh();
}
void TrainPage::exportPlots(const QString& dir)
{
    m_panel->exportPlots(dir);
}
void TrainPage::useSnapshots(bool on)
{
    m_form->useSnapshots(on);
}
void TrainPage::refreshSnapshots()
{
    m_form->refreshSnapshots();
}
QComboBox* TrainPage::snapshotBox() const
{
    return m_form->snapshotBox();
}

}  // namespace tb
