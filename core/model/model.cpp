// Model facade: loading a folder into a chosen dtype and device, and full-sequence logits.
#include "model/model_impl.h"

#include "model/devices.h"
#include "model/registry.h"
#include "model/safetensors.h"
#include "util/error.h"
#include "util/file_util.h"

#include <cstdio>

namespace tb {

torch::Dtype parseTorchDtype(const std::string& name)
{
    if (name == "fp32" || name == "float32")
        return torch::kFloat32;
    if (name == "bf16" || name == "bfloat16")
        return torch::kBFloat16;
    if (name == "fp16" || name == "float16")
        return torch::kFloat16;
    fail("unknown dtype '", name, "' (use fp32, bf16 or fp16)");
}

bool cudaAvailable()
{
    loadCudaBackend();
    return torch::cuda::is_available();
}

std::string defaultDevice()
{
    return cudaAvailable() ? "cuda" : "cpu";
}

torch::Device parseTorchDevice(const std::string& name)
{
    if (name == "auto")
        return cudaAvailable() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    if (name == "cpu")
        return torch::Device(torch::kCPU);
    if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
        if (!cudaAvailable())
            fail("device '", name,
                 "' requested but no CUDA device is available (use cpu or auto): ",
                 cudaUnavailableReason());
        int index = 0;
        if (name.size() > 5) {
            try {
                index = std::stoi(name.substr(5));
            } catch (...) {
                fail("bad device '", name, "'");
            }
        }
        if (index < 0 || index >= static_cast<int>(torch::cuda::device_count()))
            fail("device '", name, "' does not exist (", torch::cuda::device_count(),
                 " CUDA devices)");
        return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
    }
    fail("unknown device '", name, "' (use cpu, cuda, cuda:N or auto)");
}

namespace {
thread_local const std::atomic<bool>* t_loadStop = nullptr;
}

LoadStopGuard::LoadStopGuard(const std::atomic<bool>* stop) : m_previous(t_loadStop)
{
    t_loadStop = stop;
}

LoadStopGuard::~LoadStopGuard()
{
    t_loadStop = m_previous;
}

bool loadStopRequested()
{
    return t_loadStop && t_loadStop->load();
}

Model::Model(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::fromImpl(std::unique_ptr<Impl> impl)
{
    return std::unique_ptr<Model>(new Model(std::move(impl)));
}

std::unique_ptr<Model> Model::load(const std::string& dir, const LoadOptions& options)
{
    if (!fileExists(dir))
        fail(dir, ": model folder not found");
    ModelConfig config = loadModelConfig(dir);
    auto impl = std::make_unique<Impl>();
    impl->dtype = parseTorchDtype(options.dtype);
    impl->device = parseTorchDevice(options.device);
    Checkpoint checkpoint = Checkpoint::open(dir);
    impl->module = createCausalLM(config, checkpoint);
    impl->module->setQuantization(options.quant);
    impl->module->loadWeights(checkpoint, impl->dtype, impl->device);
    impl->module->eval();
    return std::unique_ptr<Model>(new Model(std::move(impl)));
}

std::unique_ptr<Model> Model::createRandom(const ModelConfig& config, const LoadOptions& options,
                                           uint64_t seed)
{
    auto impl = std::make_unique<Impl>();
    impl->dtype = parseTorchDtype(options.dtype);
    impl->device = parseTorchDevice(options.device);
    impl->module = createCausalLM(config);
    impl->module->setQuantization(options.quant);
    impl->module->initRandom(seed, impl->dtype, impl->device);
    impl->module->eval();
    return std::unique_ptr<Model>(new Model(std::move(impl)));
}

const ModelConfig& Model::config() const
{
    return m_impl->module->config();
}

std::string Model::device() const
{
    return m_impl->device.str();
}

std::string Model::dtype() const
{
    if (m_impl->dtype == torch::kBFloat16)
        return "bf16";
    if (m_impl->dtype == torch::kFloat16)
        return "fp16";
    return "fp32";
}

QuantOptions Model::quantization() const
{
    return m_impl->module->quantization();
}

WeightFootprint Model::weightFootprint() const
{
    CausalLM& module = *m_impl->module;
    WeightFootprint w;
    w.dtype = dtype();
    w.quant = module.quantization();
    w.parameters = module.parameterCount();
    w.bytes = module.weightBytes();
    for (auto& [name, layer] : module.linearLayers())
        if (const QuantizedWeight* q = layer->quantizedWeight()) {
            w.quantizedParameters += layer->weightNumel();
            w.quantizedBytes += q->bytes();
        }
    return w;
}

double WeightFootprint::bitsPerWeight() const
{
    if (quantizedParameters > 0)
        return 8.0 * static_cast<double>(quantizedBytes) / static_cast<double>(quantizedParameters);
    return dtype == "fp32" ? 32 : 16;
}

std::string describeWeights(const WeightFootprint& w)
{
    char bits[32], mib[32];
    std::snprintf(bits, sizeof bits, "%.3g", w.bitsPerWeight());
    std::snprintf(mib, sizeof mib, "%.2f", static_cast<double>(w.bytes) / (1024.0 * 1024.0));
    const bool quantized = w.quantizedParameters > 0;
    return (quantized ? quantDescription(w.quant) : w.dtype) + " · " + bits + " bits/weight" +
           (quantized ? " (linear layers)" : "") + " · " + mib + " MiB of weights";
}

int64_t Model::parameterCount() const
{
    return m_impl->module->parameterCount();
}

std::vector<float> Model::logits(const std::vector<int32_t>& ids) const
{
    if (ids.empty())
        fail("logits: empty input");
    torch::InferenceMode guard;
    const int64_t vocab = config().vocabSize;
    std::vector<int64_t> ids64(ids.begin(), ids.end());
    for (int64_t id : ids64)
        if (id < 0 || id >= vocab)
            fail("token id ", id, " is outside the vocabulary (", vocab, ")");
    auto input = torch::tensor(ids64, torch::kInt64).unsqueeze(0).to(m_impl->device);
    auto out = m_impl->module->forward(input, nullptr)
                   .squeeze(0)
                   .to(torch::kCPU, torch::kFloat32)
                   .contiguous();
    return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
}

}  // namespace tb
