"""transformers oracle for the model-config catalog: builds each catalog config's *ForCausalLM on the meta
device (no weights) and prints, per id, its parameter count and its parameters' names and shapes (a tied
head appears once, as the embedding), as JSON on the last line.

usage: catalog_oracle.py CATALOG_DIR
"""
import json
import os
import sys

import torch
import transformers


def main():
    root = sys.argv[1]
    out = {}
    for entry in json.load(open(os.path.join(root, "catalog.json")))["models"]:
        config = transformers.AutoConfig.from_pretrained(os.path.join(root, entry["id"]))
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        tensors = [[name, list(p.shape)] for name, p in model.named_parameters()]
        out[entry["id"]] = {"parameters": sum(p.numel() for p in model.parameters()), "tensors": tensors}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
