// Precompiled header for core's LibTorch translation units.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <torch/torch.h>
#include <vector>
