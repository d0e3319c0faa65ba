// DPO, IPO, SimPO, ORPO and the Bradley-Terry reward loss over the answers' log-probabilities.
#include "train/preference_losses.h"

#include "util/error.h"

namespace tb {
namespace {

namespace F = torch::nn::functional;

double meanOf(const torch::Tensor& t)
{
    return t.numel() > 0 ? t.detach().to(torch::kFloat64).mean().item<double>() : 0.0;
}

// The statistics every objective reports from its per-pair rewards and log-probabilities.
PreferenceStats statsOf(const torch::Tensor& rewardChosen, const torch::Tensor& rewardRejected,
                        const torch::Tensor& logpChosen, const torch::Tensor& logpRejected)
{
    PreferenceStats s;
    s.rewardsChosen = meanOf(rewardChosen);
    s.rewardsRejected = meanOf(rewardRejected);
    s.rewardsMargins = meanOf(rewardChosen - rewardRejected);
    s.rewardsAccuracies = meanOf((rewardChosen > rewardRejected).to(torch::kFloat32));
    s.logpsChosen = meanOf(logpChosen);
    s.logpsRejected = meanOf(logpRejected);
    s.logpsAccuracies = meanOf((logpChosen > logpRejected).to(torch::kFloat32));
    s.pairs = rewardChosen.size(0);
    return s;
}

// log(1 - exp(x)) for x < 0, stable at both ends.
torch::Tensor log1mexp(const torch::Tensor& x)
{
    return torch::where(x > -0.6931471805599453, torch::log(-torch::expm1(x)),
                        torch::log1p(-torch::exp(x)));
}

// -(1 - eps) log sigmoid(z) - eps log sigmoid(-z): the conservative form of the sigmoid loss.
torch::Tensor smoothedSigmoidLoss(const torch::Tensor& z, double eps)
{
    auto loss = -F::logsigmoid(z) * (1 - eps);
    if (eps > 0)
        loss = loss - F::logsigmoid(-z) * eps;
    return loss;
}

// The SFT term of dpo, ipo and simpo (preference.sft_weight): the mean token negative
// log-likelihood over every chosen answer token of the batch.
void addSftTerm(PairLoss& out, const PreferenceOptions& o, const PairLossInput& in)
{
    if (o.sftWeight <= 0)
        return;
    const auto nll = -in.chosen.sum() / in.chosenCount.sum();
    out.loss = out.loss + o.sftWeight * nll;
    out.stats.nllLoss = nll.detach().item<double>();
}

PairLoss directLoss(Objective objective, const PreferenceOptions& o, const PairLossInput& in)
{
    const double beta = o.beta;
    PairLoss out;
    switch (objective) {
    case Objective::Dpo:
    case Objective::Ipo: {
        if (!in.refChosen.defined() || !in.refRejected.defined())
            fail(objectiveName(objective), " needs the reference log-probabilities");
        const auto chosenRatio = in.chosen - in.refChosen;
        const auto rejectedRatio = in.rejected - in.refRejected;
        torch::Tensor losses;
        if (objective == Objective::Dpo) {
            losses = smoothedSigmoidLoss(beta * (chosenRatio - rejectedRatio), o.labelSmoothing);
        } else {
            // IPO on the per-token mean log-ratios, as TRL computes it.
            const auto delta =
                chosenRatio / in.chosenCount - rejectedRatio / in.rejectedCount - 1 / (2 * beta);
            losses = delta * delta;
        }
        out.loss = losses.mean();
        out.stats = statsOf(beta * chosenRatio.detach(), beta * rejectedRatio.detach(),
                            in.chosen.detach(), in.rejected.detach());
        return out;
    }
    case Objective::Simpo: {
        // Reference-free, length-normalised: the rewards are beta x the mean token log-prob.
        const auto chosen = in.chosen / in.chosenCount;
        const auto rejected = in.rejected / in.rejectedCount;
        const auto z = beta * (chosen - rejected - o.gamma / beta);
        out.loss = smoothedSigmoidLoss(z, o.labelSmoothing).mean();
        out.stats = statsOf(beta * chosen.detach(), beta * rejected.detach(), chosen.detach(),
                            rejected.detach());
        return out;
    }
    case Objective::Orpo: {
        if (!in.chosenNll.defined())
            fail("orpo needs the chosen answers' token loss");
        const auto chosen = in.chosen / in.chosenCount;
        const auto rejected = in.rejected / in.rejectedCount;
        const auto logOdds = (chosen - rejected) - (log1mexp(chosen) - log1mexp(rejected));
        const auto ratio = F::logsigmoid(logOdds);
        out.loss = in.chosenNll - beta * ratio.mean();
        out.stats = statsOf(beta * chosen.detach(), beta * rejected.detach(), chosen.detach(),
                            rejected.detach());
        out.stats.nllLoss = in.chosenNll.detach().item<double>();
        out.stats.logOddsRatio = meanOf(logOdds);
        return out;
    }
    case Objective::Sft:
    case Objective::Reward:
        break;
    }
    fail("objective '", objectiveName(objective), "' is not a preference loss");
}

}  // namespace

AnswerLogps answerLogps(const torch::Tensor& logits, const torch::Tensor& labels)
{
    // [rows, width, vocab] -> log-probability of each label; -100 positions read token 0 and are
    // masked out.
    const auto mask = labels.ne(-100);
    const auto safe = labels.masked_fill(~mask, 0);
    const auto logp = torch::log_softmax(logits.to(torch::kFloat32), -1)
                          .gather(-1, safe.unsqueeze(-1))
                          .squeeze(-1);
    const auto maskF = mask.to(torch::kFloat32);
    return {(logp * maskF).sum(1), maskF.sum(1).clamp_min(1.0)};
}

PairLoss preferenceLoss(Objective objective, const PreferenceOptions& o, const PairLossInput& in)
{
    PairLoss out = directLoss(objective, o, in);
    if (objective != Objective::Orpo)
        addSftTerm(out, o, in);
    return out;
}

PairLoss rewardLoss(const torch::Tensor& chosen, const torch::Tensor& rejected,
                    const torch::Tensor& margin)
{
    PairLoss out;
    out.loss = -F::logsigmoid(chosen - rejected - margin).mean();
    out.stats = statsOf(chosen.detach(), rejected.detach(), chosen.detach(), rejected.detach());
    return out;
}

}  // namespace tb
