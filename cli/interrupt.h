// Ctrl-C during a training run: the first SIGINT asks the job to stop after its current step (it
// then saves a checkpoint); the previous handler is restored when the guard goes out of scope.
#pragma once

namespace tb {

class TrainingJob;

class InterruptGuard {
public:
    explicit InterruptGuard(TrainingJob& job);
    ~InterruptGuard();
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

private:
    void (*m_previous)(int) = nullptr;
};

}  // namespace tb
