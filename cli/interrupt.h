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
    // Whether this process got a SIGINT while a guard was in place (a rank that stopped because
    // another one did got none).
    static bool received();

private:
    void (*m_previous)(int) = nullptr;
};

}  // namespace tb
