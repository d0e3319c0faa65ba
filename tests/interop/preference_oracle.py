"""Preference oracle for Tunebench's interop test: TRL's trainers compute the preference and reward
losses on the same model folder, pairs and settings as Tunebench, and report what they logged and
the weights they ended with.

usage:
  preference_oracle.py dpo SPEC_JSON OUT_DIR
      TRL's DPOTrainer (loss_type "sigmoid" or "ipo"), full fine-tuning with a frozen reference copy,
      plain SGD, no clipping, one batch of every pair per step. Writes OUT_DIR/weights.safetensors
      (the policy's parameters after the last step) and prints {"tokens": [{"prompt_ids",
      "chosen_ids", "rejected_ids"}...], "logs": [per step: "loss", "grad_norm", "rewards/*",
      "logps/*"]}.
  preference_oracle.py step SPEC_JSON OUT_DIR
      One SGD step of "simpo" (CPO's loss with cpo_alpha 0) or "orpo", with the losses of TRL's
      CPOTrainer and ORPOTrainer on the batch TRL's DPO tokenization and collator give. Writes
      OUT_DIR/weights.safetensors and prints {"loss", "grad_norm", "rewards/*", "logps/*",
      "nll_loss"?, "log_odds_ratio"?}.
  preference_oracle.py reward SPEC_JSON
      Loads the exported folder SPEC["model"] with AutoModelForSequenceClassification, takes
      RewardTrainer's tokenization of SPEC["pairs"] and its compute_loss, and prints {"loss",
      "chosen": [scores], "rejected": [scores]}.

SPEC_JSON: {"model", "pairs" (TRL standard conversational rows), "beta", "gamma", "label_smoothing",
"loss", "lr", "steps", "max_length", "sft_weight" (dpo mode: TRL's "sft" loss beside it)}.
"""
import json
import logging
import os
import sys
import types
import warnings

import torch
import torch.nn.functional as F
import transformers
from datasets import Dataset
from safetensors.torch import save_file

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
transformers.logging.set_verbosity_error()
torch.manual_seed(0)


def load_policy(spec):
    model = transformers.AutoModelForCausalLM.from_pretrained(spec["model"], dtype=torch.float32)
    tokenizer = transformers.AutoTokenizer.from_pretrained(spec["model"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def dpo_config(spec, out_dir, loss_type):
    from trl import DPOConfig

    # sft_weight: TRL's SFT term beside the preference loss (loss_type [..., "sft"]).
    weight = spec.get("sft_weight", 0.0)
    loss_types = [loss_type] + (["sft"] if weight > 0 else [])
    loss_weights = [1.0] + ([weight] if weight > 0 else [])
    return DPOConfig(output_dir=out_dir, per_device_train_batch_size=len(spec["pairs"]),
                     max_steps=spec.get("steps", 1), learning_rate=spec["lr"], optim="sgd",
                     lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0,
                     max_grad_norm=1e9, logging_steps=1, report_to=[], use_cpu=True,
                     save_strategy="no", beta=spec["beta"], loss_type=loss_types, loss_weights=loss_weights,
                     max_length=spec["max_length"], seed=0, dataloader_num_workers=0,
                     bf16=False, fp16=False, remove_unused_columns=False)


def dpo_trainer(spec, out_dir, loss_type):
    from trl import DPOTrainer

    model, tokenizer = load_policy(spec)
    ref, _ = load_policy(spec)
    trainer = DPOTrainer(model=model, ref_model=ref, args=dpo_config(spec, out_dir, loss_type),
                         train_dataset=Dataset.from_list(spec["pairs"]), processing_class=tokenizer)
    return trainer, model, tokenizer


def tokens_of(trainer):
    return [{k: list(map(int, row[k])) for k in ("prompt_ids", "chosen_ids", "rejected_ids")}
            for row in trainer.train_dataset]


def save_weights(model, out_dir):
    weights = {n: p.detach().contiguous() for n, p in model.named_parameters()}
    save_file(weights, os.path.join(out_dir, "weights.safetensors"))


def run_dpo(spec, out_dir):
    trainer, model, _ = dpo_trainer(spec, out_dir, spec["loss"])
    trainer.train()
    keys = ("loss", "grad_norm", "rewards/chosen", "rewards/rejected", "rewards/margins",
            "rewards/accuracies", "logps/chosen", "logps/rejected")
    logs = [{k: float(entry[k]) for k in keys} for entry in trainer.state.log_history if "loss" in entry]
    save_weights(model, out_dir)
    print(json.dumps({"tokens": tokens_of(trainer), "logs": logs}))


def collated(trainer, tokenizer):
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    collator = DataCollatorForPreference(pad_token_id=tokenizer.pad_token_id)
    return collator([dict(row) for row in trainer.train_dataset])


def run_step(spec, out_dir):
    from trl.experimental.cpo import CPOTrainer
    from trl.experimental.orpo import ORPOTrainer

    trainer, _, tokenizer = dpo_trainer(spec, out_dir, "sigmoid")  # TRL's tokenization only
    model, _ = load_policy(spec)
    model.train()
    batch = collated(trainer, tokenizer)
    n = len(spec["pairs"])
    input_ids, attention, completion = batch["input_ids"], batch["attention_mask"], batch["completion_mask"]
    logits = model(input_ids=input_ids, attention_mask=attention).logits
    labels = input_ids.masked_fill(completion == 0, -100)
    logps = CPOTrainer.get_batch_logps(logits, labels, average_log_prob=True)
    chosen, rejected = logps[:n], logps[n:]
    device = types.SimpleNamespace(device=torch.device("cpu"))
    out = {}
    if spec["loss"] == "simpo":
        fake = types.SimpleNamespace(alpha=0.0, beta=spec["beta"], label_smoothing=spec["label_smoothing"],
                                     loss_type="simpo", simpo_gamma=spec["gamma"], accelerator=device)
        losses, chosen_rewards, rejected_rewards = CPOTrainer.cpo_loss(fake, chosen, rejected)
        loss = losses.mean()  # cpo_alpha 0: no NLL term
    else:
        fake = types.SimpleNamespace(beta=spec["beta"], accelerator=device)
        losses, chosen_rewards, rejected_rewards, ratio, log_odds = ORPOTrainer.odds_ratio_loss(
            fake, chosen, rejected)
        # ORPOTrainer.concatenated_forward: the NLL of the chosen rows over prompt and answer.
        full = torch.where(attention == 1, input_ids, -100)
        nll = F.cross_entropy(logits[:n, :-1, :].reshape(-1, logits.size(-1)), full[:n, 1:].reshape(-1))
        loss = nll - losses.mean()
        out["nll_loss"] = float(nll)
        out["log_odds_ratio"] = float(log_odds)
    loss.backward()
    grad_norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters() if p.grad is not None))
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= spec["lr"] * p.grad
    save_weights(model, out_dir)
    out.update({"loss": float(loss), "grad_norm": float(grad_norm),
                "rewards/chosen": float(chosen_rewards.mean()),
                "rewards/rejected": float(rejected_rewards.mean()),
                "rewards/margins": float((chosen_rewards - rejected_rewards).mean()),
                "rewards/accuracies": float((chosen_rewards > rejected_rewards).float().mean()),
                "logps/chosen": float(chosen.mean()), "logps/rejected": float(rejected.mean())})
    print(json.dumps(out))


def run_reward(spec, out_dir):
    from trl import RewardConfig, RewardTrainer

    model = transformers.AutoModelForSequenceClassification.from_pretrained(spec["model"], dtype=torch.float32)
    tokenizer = transformers.AutoTokenizer.from_pretrained(spec["model"])
    args = RewardConfig(output_dir=out_dir, per_device_train_batch_size=len(spec["pairs"]), report_to=[],
                        use_cpu=True, max_length=spec["max_length"], bf16=False, fp16=False, seed=0)
    trainer = RewardTrainer(model=model, args=args, train_dataset=Dataset.from_list(spec["pairs"]),
                            processing_class=tokenizer)
    batch = trainer.data_collator([dict(row) for row in trainer.train_dataset])
    model.eval()
    with torch.no_grad():
        loss = trainer.compute_loss(model, dict(batch))
        scores = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.squeeze(-1)
    n = len(spec["pairs"])
    print(json.dumps({"loss": float(loss), "chosen": scores[:n].tolist(), "rejected": scores[n:].tolist(),
                      "pad_token_id": model.config.pad_token_id}))


def main():
    mode, spec_path = sys.argv[1], sys.argv[2]
    out_dir = sys.argv[3] if len(sys.argv) > 3 else os.path.dirname(os.path.abspath(spec_path))
    with open(spec_path) as f:
        spec = json.load(f)
    {"dpo": run_dpo, "step": run_step, "reward": run_reward}[mode](spec, out_dir)


if __name__ == "__main__":
    main()
