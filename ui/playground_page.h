// The Playground: one prompt, the base model's and the fine-tuned model's continuations side by
// side (and, when chosen, the base once more with its linear weights quantised as QLoRA holds
// them, in a middle column), streamed from a worker (GenerationController) in ~40 ms batches of
// tokens, with sampling settings; each column says how its model holds its weights. Best-of-N
// samples N answers and ranks them by a reward-model run's scores.
#pragma once

#include "quant/quant_format.h"

#include <QWidget>

class QBoxLayout;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableView;

namespace tb {

class GenerationController;
struct GenerationBatch;
struct GenerationRequest;
class RankedAnswersModel;
class StudioState;

class PlaygroundPage : public QWidget {
    Q_OBJECT
public:
    explicit PlaygroundPage(StudioState* state, QWidget* parent = nullptr);
    ~PlaygroundPage() override;  // cancels and waits for the worker

    void setPrompt(const QString& prompt);
    void generate();  // base, then fine-tuned (when a run is selected), on a worker thread
    void cancel();
    bool busy() const;
    QString baseText() const;
    QString tunedText() const;
    QString statusText() const;  // the line under the prompt (progress, or why it cannot generate)
    QPushButton* generateButton() const { return m_generate; }
    QString quantizedBaseText() const;
    // The quantised base's format: "off", "NF4 (double quant)", "NF4", "FP4", "int8" (item data:
    // the quant kind's name; Qt::UserRole + 1: double quantisation). Off hides its column.
    QComboBox* quantizedBaseBox() const { return m_quantBase; }
    QWidget* quantizedBaseColumn() const { return m_quantColumn; }
    // A column's weights as its model holds them (describeWeights), once it has answered; side as
    // in tokenArrived.
    QString weightsText(int side) const;
    int tokensStreamed() const { return m_tokens; }
    QComboBox* runBox() const { return m_run; }
    GenerationController* controller() const { return m_controller; }
    // Sampling settings (the screenshot tour and tests set them through these).
    QSpinBox* maxTokensBox() const { return m_maxTokens; }
    QCheckBox* greedyBox() const { return m_greedy; }
    QComboBox* templateBox() const { return m_template; }
    // Best-of-N: the reward-model runs to score with, N (2-16), and the ranked answers.
    QComboBox* rewardRunBox() const { return m_rewardRun; }
    QSpinBox* bestOfNBox() const { return m_bestOf; }
    RankedAnswersModel* rankedAnswers() const { return m_ranked; }
    // N sampled answers from the chosen run (or the base), scored by the chosen reward run on the
    // worker; false when no reward run is chosen or a generation is running.
    bool bestOfN();

Q_SIGNALS:
    // Per token, side 0: base, 1: fine-tuned, 2: the base quantised.
    void tokenArrived(int side, const QString& text);
    void generationFinished(const QString& message);

private:
    void refreshRuns();
    void showModelMissing();  // a model without tokenizer or weights cannot generate: say so
    void onBatch(const GenerationBatch& batch);
    GenerationRequest request() const;  // the prompt and sampling settings
    void buildBestOfN(QWidget* box);
    QWidget* buildSettings();  // the run, the quantised base, the template and the sampling
    void buildOutputs(QBoxLayout* layout);
    void showQuantizedBaseColumn();
    QuantOptions quantizedBase() const;  // the box's choice
    void clearOutputs();

    StudioState* m_state;
    QPlainTextEdit* m_prompt = nullptr;
    QComboBox* m_template = nullptr;
    QComboBox* m_run = nullptr;
    QSpinBox *m_maxTokens = nullptr, *m_topK = nullptr, *m_seed = nullptr;
    QDoubleSpinBox *m_temperature = nullptr, *m_topP = nullptr, *m_repetition = nullptr;
    QCheckBox* m_greedy = nullptr;
    QPushButton *m_generate = nullptr, *m_stop = nullptr;
    QComboBox* m_quantBase = nullptr;
    QPlainTextEdit *m_base = nullptr, *m_tuned = nullptr, *m_quantized = nullptr;
    QLabel *m_baseTitle = nullptr, *m_tunedTitle = nullptr, *m_quantTitle = nullptr;
    QLabel* m_weights[3] = {};  // per side: how its model holds its weights
    QWidget* m_quantColumn = nullptr;
    QLabel* m_status = nullptr;
    GenerationController* m_controller = nullptr;
    QComboBox* m_rewardRun = nullptr;
    QSpinBox* m_bestOf = nullptr;
    QPushButton* m_bestOfButton = nullptr;
    RankedAnswersModel* m_ranked = nullptr;
    QTableView* m_rankedView = nullptr;
    int m_tokens = 0;
};

}  // namespace tb
