// TrainLaunchBox: processes, GPUs and ZeRO stage <-> StudioState (never rewriting itself in answer
// to its own change).
#include "train_launch_box.h"

#include "studio_state.h"

#include "model/devices.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QListWidget>
#include <QSpinBox>
#include <QThread>

#include <algorithm>
#include <utility>

namespace tb {

TrainLaunchBox::TrainLaunchBox(StudioState* state, int cudaDevices, QWidget* parent)
    : QGroupBox(tr("Processes"), parent), m_state(state)
{
    auto* form = new QFormLayout(this);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_processes = new QSpinBox(this);
    m_processes->setToolTip(
        tr("1 trains inside the studio. More start `tunebench train --nproc N`: one process per "
           "rank (one GPU each on CUDA), the micro-batch per process."));
    m_gpus = new QListWidget(this);
    m_gpus->setMaximumHeight(90);
    m_gpus->setToolTip(tr("The GPUs the processes take, one each, in this order "
                          "(CUDA_VISIBLE_DEVICES)."));
    m_zero = new QComboBox(this);
    m_zero->addItem(tr("0: replicate all"), 0);
    m_zero->addItem(tr("1: shard optimizer"), 1);
    m_zero->addItem(tr("2: + gradients"), 2);
    m_zero->setToolTip(tr("dist.zero: 0 keeps everything in every process; 1 shards the optimizer "
                          "states over the processes; 2 the gradients too"));
    m_zero->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_zero->setMinimumContentsLength(8);  // the narrow settings column
    m_note = new QLabel(this);
    m_note->setWordWrap(true);
    form->addRow(tr("Processes:"), m_processes);
    form->addRow(tr("GPUs:"), m_gpus);
    form->addRow(tr("ZeRO stage:"), m_zero);
    form->addRow(m_note);
    setCudaDevices(cudaDevices < 0 ? cudaDeviceCount() : cudaDevices);

    connect(m_processes, &QSpinBox::valueChanged, this, [this] { toState(); });
    connect(m_zero, &QComboBox::currentIndexChanged, this, [this] { toState(); });
    connect(m_gpus, &QListWidget::itemChanged, this, [this] {
        if (!m_updating)  // the list being filled or set from the state
            toState();
    });
    connect(m_state, &StudioState::configChanged, this, [this](QObject* origin) {
        if (origin != this)
            fromState();
    });
    connect(m_state, &StudioState::launchChanged, this, [this](QObject* origin) {
        if (origin != this)
            fromState();
    });
    fromState();
}

void TrainLaunchBox::setCudaDevices(int count)
{
    const bool updating = std::exchange(m_updating, true);
    m_gpus->clear();
    for (int i = 0; i < count; ++i) {
        auto* item = new QListWidgetItem(tr("GPU %1 (cuda:%1)").arg(i), m_gpus);
        item->setData(Qt::UserRole, i);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Checked);
    }
    if (auto* form = qobject_cast<QFormLayout*>(layout()))
        form->setRowVisible(m_gpus, count > 0);
    m_updating = updating;
    updateLimits();
    if (!m_updating)
        writeLaunch();
}

QList<int> TrainLaunchBox::checkedGpus() const
{
    QList<int> ids;
    for (int i = 0; i < m_gpus->count(); ++i)
        if (m_gpus->item(i)->checkState() == Qt::Checked)
            ids << m_gpus->item(i)->data(Qt::UserRole).toInt();
    return ids;
}

void TrainLaunchBox::updateLimits()
{
    // On CUDA one process per checked GPU; on the CPU up to one per core (at least 2).
    const int limit = m_gpus->count() > 0 ? std::max<int>(1, int(checkedGpus().size()))
                                          : std::max(2, QThread::idealThreadCount());
    const bool updating = std::exchange(m_updating, true);
    m_processes->setRange(1, limit);
    m_updating = updating;
    const int n = m_processes->value();
    m_zero->setEnabled(n > 1);
    m_note->setText(n > 1 ? tr("%1 processes (tunebench train --nproc %1): a global batch of %1 "
                               "x the micro-batch; per-rank progress and memory in the run panel.")
                                .arg(n)
                          : tr("1 process: the run trains inside the studio."));
}

void TrainLaunchBox::writeLaunch()
{
    LaunchSettings launch;
    launch.processes = m_processes->value();
    launch.gpus = checkedGpus();
    m_state->setLaunch(launch, this);
}

void TrainLaunchBox::toState()
{
    if (m_updating)
        return;
    updateLimits();
    writeLaunch();
    const int zero = m_zero->currentData().toInt();
    if (m_state->config().dist.zero != zero)
        m_state->updateConfig([zero](TrainConfig& c) { c.dist.zero = zero; }, this);
}

void TrainLaunchBox::fromState()
{
    if (m_updating)
        return;
    m_updating = true;
    const LaunchSettings& launch = m_state->launch();
    if (m_gpus->count() > 0 && launch.gpus != checkedGpus())
        for (int i = 0; i < m_gpus->count(); ++i) {
            QListWidgetItem* item = m_gpus->item(i);
            const bool on = launch.gpus.contains(item->data(Qt::UserRole).toInt());
            if ((item->checkState() == Qt::Checked) != on)
                item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
        }
    m_updating = false;
    updateLimits();
    m_updating = true;
    if (m_processes->value() != launch.processes)
        m_processes->setValue(launch.processes);
    const int zero = m_zero->findData(m_state->config().dist.zero);
    if (zero >= 0 && m_zero->currentIndex() != zero)
        m_zero->setCurrentIndex(zero);
    m_updating = false;
    updateLimits();
}

}  // namespace tb
