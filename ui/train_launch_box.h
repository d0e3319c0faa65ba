// The Train page's "Processes" group: how many processes a run trains in (1: inside the studio),
// which GPUs they take when CUDA devices are present (checked; their number bounds the processes)
// and the ZeRO stage (the config's dist.zero). Writes StudioState's launch settings and config;
// with one process the GPU list and ZeRO are disabled (a single process ignores them).
#pragma once

#include <QGroupBox>
#include <QList>

class QComboBox;
class QLabel;
class QListWidget;
class QSpinBox;

namespace tb {

class StudioState;

class TrainLaunchBox : public QGroupBox {
    Q_OBJECT
public:
    // cudaDevices: the devices to list; -1 asks core (cudaDeviceCount). Tests pass a number.
    explicit TrainLaunchBox(StudioState* state, int cudaDevices = -1, QWidget* parent = nullptr);

    QSpinBox* processesBox() const { return m_processes; }
    QListWidget* gpuList() const { return m_gpus; }  // hidden without CUDA devices
    QComboBox* zeroBox() const { return m_zero; }
    QList<int> checkedGpus() const;
    // The GPU list again for `count` devices (all checked), e.g. after a device change.
    void setCudaDevices(int count);

private:
    void toState();
    void writeLaunch();  // processes and GPUs only
    void fromState();
    void updateLimits();

    StudioState* m_state;
    QSpinBox* m_processes = nullptr;
    QListWidget* m_gpus = nullptr;
    QComboBox* m_zero = nullptr;
    QLabel* m_note = nullptr;
    bool m_updating = false;
};

}  // namespace tb
