// Forming the c10d group (TCPStore + Gloo or NCCL), its collectives, and naming a lost rank.
#include "dist/process_group.h"

#include "util/error.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef TB_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

#include <chrono>
#include <cstdlib>

namespace tb {

#ifdef TB_HAVE_NCCL
// dist/nccl_group.cpp: the NCCL backend on this rank's GPU.
c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size, int deviceIndex,
                                                  std::chrono::milliseconds timeout);
#endif

namespace {

using std::chrono::milliseconds;

std::string address(const DistEnv& env)
{
    return env.masterAddr + ":" + std::to_string(env.masterPort);
}

c10::intrusive_ptr<c10d::Store> connectStore(const DistEnv& env, bool server, int timeoutSeconds)
{
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(env.masterPort);
    o.isServer = server;
    o.numWorkers = server ? std::optional<std::size_t>(env.worldSize) : std::nullopt;
    o.waitWorkers = false;
    o.timeout = milliseconds(int64_t(timeoutSeconds) * 1000);
    try {
        return c10::make_intrusive<c10d::TCPStore>(env.masterAddr, o);
    } catch (const std::exception& e) {
        if (server)
            fail("rank 0 cannot host the store on ", address(env),
                 " (is the port in use? choose another with --master-port or MASTER_PORT): ",
                 e.what());
        fail("rank ", env.rank, " cannot reach the store at ", address(env), " within ",
             timeoutSeconds, " s: ", e.what());
    }
}

#ifdef TB_HAVE_GLOO
c10::intrusive_ptr<c10d::Backend> makeGlooBackend(const DistEnv& env,
                                                  const c10::intrusive_ptr<c10d::Store>& store,
                                                  milliseconds timeout)
{
    auto options = c10d::ProcessGroupGloo::Options::create_default(timeout);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
        options->devices = {c10d::ProcessGroupGloo::createDeviceForInterface(ifname)};
    else if (env.masterAddr == "127.0.0.1" || env.masterAddr == "localhost")
        options->devices = {c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")};
    options->threads = 1;  // one collective at a time per rank keeps the order of buckets
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.worldSize, options);
}
#endif

// NCCL reduces device tensors only: host scalars travel through a device copy and back.
std::vector<torch::Tensor> onDevice(const std::vector<torch::Tensor>& tensors,
                                    const torch::Device& device)
{
    std::vector<torch::Tensor> out = tensors;
    if (device.is_cuda())
        for (auto& t : out)
            if (!t.is_cuda())
                t = t.to(device);
    return out;
}

void copyBack(const std::vector<torch::Tensor>& host, const std::vector<torch::Tensor>& device)
{
    for (size_t i = 0; i < host.size(); ++i)
        if (!host[i].is_same(device[i]))
            host[i].copy_(device[i]);
}

std::vector<uint8_t> bytesOf(const std::string& s)
{
    return {s.begin(), s.end()};
}

// c10d logs a warning with a 20-frame C++ backtrace when a peer's socket closes (a rank killed,
// the store gone), before the call throws; the throw reaches the user as this group's one message
// naming the lost rank. So c10's warnings are off for the process unless TORCH_CPP_LOG_LEVEL
// (LibTorch's own setting) asks for them; errors still print.
void quietLibraryWarnings()
{
    const char* level = std::getenv("TORCH_CPP_LOG_LEVEL");
    if ((level == nullptr || *level == '\0') && FLAGS_caffe2_log_level < c10::GLOG_ERROR)
        FLAGS_caffe2_log_level = c10::GLOG_ERROR;
}

}  // namespace

DistGroup::DistGroup(const DistEnv& env, const torch::Device& device, int timeoutSeconds)
    : m_env(env), m_device(device), m_timeoutSeconds(timeoutSeconds)
{
    quietLibraryWarnings();
    const milliseconds timeout(int64_t(timeoutSeconds) * 1000);
    m_store = connectStore(env, env.rank == 0, timeoutSeconds);
    m_heartbeatStore = connectStore(env, false, timeoutSeconds);
    m_heartbeat = std::thread([this] { heartbeat(); });
    try {
        if (device.is_cuda()) {
#ifdef TB_HAVE_NCCL
            m_backend = makeNcclBackend(m_store, env.rank, env.worldSize, device.index(), timeout);
#else
            fail("this build of Tunebench has no NCCL (CUDA data parallelism): build with the CUDA "
                 "wheel's NCCL headers, or train with device: cpu (Gloo)");
#endif
        } else {
#ifdef TB_HAVE_GLOO
            m_backend = makeGlooBackend(env, m_store, timeout);
#else
            fail("this build of Tunebench has no Gloo (CPU data parallelism): install libgloo-dev "
                 "(scripts/setup does) and rebuild");
#endif
        }
    } catch (const Error&) {
        m_stop = true;
        m_heartbeat.join();
        throw;
    } catch (const std::exception& e) {
        m_stop = true;
        m_heartbeat.join();
        fail("rank ", env.rank, " cannot join the ", device.is_cuda() ? "NCCL" : "Gloo",
             " group through the store at ", address(env), ": ", e.what());
    }
}

DistGroup::~DistGroup()
{
    m_stop = true;
    if (m_heartbeat.joinable())
        m_heartbeat.join();
}

std::string DistGroup::backendName() const
{
    return m_device.is_cuda() ? "nccl" : "gloo";
}

// Every 250 ms: this rank's counter in the store, so that a collective that fails can say which
// rank stopped.
void DistGroup::heartbeat()
{
    const std::string key = "tb/alive/" + std::to_string(m_env.rank);
    for (int64_t beat = 1; !m_stop; ++beat) {
        try {
            m_heartbeatStore->set(key, bytesOf(std::to_string(beat)));
        } catch (const std::exception&) {
            return;  // the store (rank 0) is gone: collectives will say so
        }
        for (int i = 0; i < 5 && !m_stop; ++i)
            std::this_thread::sleep_for(milliseconds(50));
    }
}

std::string DistGroup::lostRanks()
{
    auto beats = [&]() {
        std::vector<std::string> v(static_cast<size_t>(m_env.worldSize));
        for (int r = 0; r < m_env.worldSize; ++r) {
            const std::string key = "tb/alive/" + std::to_string(r);
            if (m_store->check({key})) {
                const auto b = m_store->get(key);
                v[static_cast<size_t>(r)] = std::string(b.begin(), b.end());
            }
        }
        return v;
    };
    try {
        const auto before = beats();
        std::this_thread::sleep_for(std::chrono::seconds(2));
        const auto after = beats();
        std::string lost;
        for (int r = 0; r < m_env.worldSize; ++r)
            if (r != m_env.rank && before[size_t(r)] == after[size_t(r)])
                lost += (lost.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r);
        return lost.empty() ? std::string("no rank lost its heartbeat")
                            : lost + " stopped (no heartbeat for 2 s)";
    } catch (const std::exception&) {
        return "rank 0 (the store at " + address(m_env) + ") is unreachable";
    }
}

void DistGroup::failCollective(const std::string& what, const std::exception& error)
{
    fail("rank ", m_env.rank, ": ", what, " failed: ", lostRanks(), " (", error.what(), ")");
}

void DistGroup::wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what)
{
    try {
        work->wait(milliseconds(int64_t(m_timeoutSeconds) * 1000));
    } catch (const std::exception& e) {
        failCollective(what, e);
    }
}

void DistGroup::complete(const std::string& what,
                         const std::function<c10::intrusive_ptr<c10d::Work>()>& launch)
{
    c10::intrusive_ptr<c10d::Work> work;
    try {
        work = launch();
    } catch (const std::exception& e) {
        failCollective(what, e);
    }
    wait(work, what);
}

c10::intrusive_ptr<c10d::Work> DistGroup::allreduceAsync(torch::Tensor tensor)
{
    std::vector<torch::Tensor> t{std::move(tensor)};
    return m_backend->allreduce(t);
}

void DistGroup::allreduceSum(std::vector<torch::Tensor> host, const std::string& what)
{
    std::vector<torch::Tensor> tensors = onDevice(host, m_device);
    complete(what, [&] { return m_backend->allreduce(tensors); });
    copyBack(host, tensors);
}

void DistGroup::allreduceMax(torch::Tensor tensor, const std::string& what)
{
    const std::vector<torch::Tensor> host{std::move(tensor)};
    std::vector<torch::Tensor> t = onDevice(host, m_device);
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::MAX;
    complete(what, [&] { return m_backend->allreduce(t, o); });
    copyBack(host, t);
}

void DistGroup::broadcast(std::vector<torch::Tensor> tensors, int root, const std::string& what)
{
    c10d::BroadcastOptions o;
    o.rootRank = root;
    for (auto& t : tensors) {
        std::vector<torch::Tensor> one = onDevice({t}, m_device);
        complete(what, [&] { return m_backend->broadcast(one, o); });
        copyBack({t}, one);
    }
}

c10::intrusive_ptr<c10d::Work> DistGroup::reduceScatterAsync(torch::Tensor out, torch::Tensor in)
{
    std::vector<torch::Tensor> outs{std::move(out)};
    std::vector<std::vector<torch::Tensor>> ins(1);
    const int64_t n = in.numel() / m_env.worldSize;
    for (int r = 0; r < m_env.worldSize; ++r)
        ins[0].push_back(in.narrow(0, r * n, n));
    return m_backend->reduce_scatter(outs, ins);
}

void DistGroup::allgather(torch::Tensor out, torch::Tensor in, const std::string& what)
{
    std::vector<std::vector<torch::Tensor>> outs(1);
    const int64_t n = in.numel();
    for (int r = 0; r < m_env.worldSize; ++r)
        outs[0].push_back(out.narrow(0, r * n, n));
    std::vector<torch::Tensor> ins{std::move(in)};
    complete(what, [&] { return m_backend->allgather(outs, ins); });
}

void DistGroup::barrier(const std::string& what)
{
    complete(what, [&] { return m_backend->barrier(); });
}

std::vector<std::string> DistGroup::exchange(const std::string& key, const std::string& value)
{
    const std::string prefix = "tb/x/" + key + "/";
    std::vector<std::string> values;
    try {
        m_store->set(prefix + std::to_string(m_env.rank), bytesOf(value));
        for (int r = 0; r < m_env.worldSize; ++r) {
            const auto b = m_store->get(prefix + std::to_string(r));  // waits up to the timeout
            values.emplace_back(b.begin(), b.end());
        }
    } catch (const std::exception& e) {
        failCollective("exchanging " + key + " through the store", e);
    }
    return values;
}

}  // namespace tb
