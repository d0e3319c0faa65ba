// Synthetic examples from the Data page: a dialog for the generation settings, and the job that has
// the model write N examples per seed record on a worker (core's generateSynthetic); the new
// records arrive flagged synthetic and pending review.
#pragma once

#include "data/curate/synthetic.h"

#include <QDialog>
#include <QString>

#include <optional>

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace tb {

class DataJobs;

struct SynthRequest {
    QString modelDir;
    QString seeds = QStringLiteral("accepted");  // accepted | pending | all | selected
    qint64 selectedId = 0;                       // seeds == "selected"
    int limit = 20;                              // seed records at most
    SynthOptions options;
};

class SynthDialog : public QDialog {
    Q_OBJECT
public:
    SynthDialog(const QString& chatTemplate, qint64 selectedId, QWidget* parent = nullptr);
    SynthRequest request(const QString& modelDir) const;

private:
    qint64 m_selectedId;
    QString m_chatTemplate;
    QComboBox* m_seeds = nullptr;
    QSpinBox *m_limit = nullptr, *m_perSeed = nullptr, *m_maxTokens = nullptr, *m_seed = nullptr;
    QDoubleSpinBox* m_temperature = nullptr;
    QPlainTextEdit* m_template = nullptr;
};

// Starts the generation on `jobs` (false when a job runs or no store is open). onDone gets the
// report on the GUI thread.
bool runSynthetic(DataJobs* jobs, const SynthRequest& request,
                  const std::function<void(const SynthReport&)>& onDone);

}  // namespace tb
