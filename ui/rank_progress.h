// The run panel's per-rank rows for a launched run: each rank's latest step, loss, tokens/s and
// tensor memory, from the drained batches' rank steps.
#pragma once

#include "job_event_batch.h"

#include <QTableWidget>

#include <vector>

namespace tb {

class RankProgress : public QTableWidget {
    Q_OBJECT
public:
    explicit RankProgress(QWidget* parent = nullptr);

    void reset(int ranks);  // one empty row per rank
    void update(const std::vector<RankStep>& steps);
    qint64 stepOf(int rank) const;  // the latest step shown for `rank`; 0 before its first
};

}  // namespace tb
