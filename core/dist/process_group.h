// One data-parallel group on PyTorch's c10d: rank 0 hosts a TCPStore, every rank joins a Gloo
// (CPU) or NCCL (CUDA) process group through it. Collectives that fail or time out name the rank
// that was lost (each rank keeps a heartbeat in the store). Internal to core (LibTorch types).
#pragma once

#include "dist/dist_env.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/torch.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tb {

class DistGroup {
public:
    // Connects within timeoutSeconds (throws naming the address tried, or the port in use on rank
    // 0).
    DistGroup(const DistEnv& env, const torch::Device& device, int timeoutSeconds);
    ~DistGroup();
    DistGroup(const DistGroup&) = delete;
    DistGroup& operator=(const DistGroup&) = delete;

    int rank() const { return m_env.rank; }
    int size() const { return m_env.worldSize; }
    const DistEnv& env() const { return m_env; }
    const torch::Device& device() const { return m_device; }
    std::string backendName() const;  // "gloo" or "nccl"

    // Blocking collectives; `what` names the step in an error ("the gradient all-reduce").
    void allreduceSum(std::vector<torch::Tensor> tensors, const std::string& what);
    void allreduceMax(torch::Tensor tensor, const std::string& what);
    void broadcast(std::vector<torch::Tensor> tensors, int root, const std::string& what);
    // in: [size x n] flat, out: [n], this rank's chunk of the sum (asynchronous).
    c10::intrusive_ptr<c10d::Work> reduceScatterAsync(torch::Tensor out, torch::Tensor in);
    c10::intrusive_ptr<c10d::Work> allreduceAsync(torch::Tensor tensor);
    // in: [n], out: [size x n] flat, every rank's chunk in rank order.
    void allgather(torch::Tensor out, torch::Tensor in, const std::string& what);
    void barrier(const std::string& what);
    // Waits for an asynchronous collective; failures name the lost rank.
    void wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what);
    // Every rank's value for `key` (set through the store), in rank order.
    std::vector<std::string> exchange(const std::string& key, const std::string& value);

    // The ranks whose heartbeat stopped, for messages: "rank 1 (no heartbeat for 3 s)".
    std::string lostRanks();
    [[noreturn]] void failCollective(const std::string& what, const std::exception& error);

private:
    void heartbeat();
    // Launches a collective and waits for it; a failure of either names the lost rank.
    void complete(const std::string& what,
                  const std::function<c10::intrusive_ptr<c10d::Work>()>& launch);

    DistEnv m_env;
    torch::Device m_device;
    int m_timeoutSeconds;
    c10::intrusive_ptr<c10d::Store> m_store;
    c10::intrusive_ptr<c10d::Store> m_heartbeatStore;  // its own connection, for its own thread
    c10::intrusive_ptr<c10d::Backend> m_backend;
    std::atomic<bool> m_stop{false};
    std::thread m_heartbeat;
};

}  // namespace tb
