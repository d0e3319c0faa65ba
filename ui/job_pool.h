// The thread pool of the studio's long jobs: training's helpers aside, an evaluation, a
// generation, an export, an import and a Data job each hold a thread for seconds to hours. Qt's
// global pool has idealThreadCount() threads (2 on a 2-core machine): two such jobs there would
// queue every short read behind them (a store opening, the table's ids, snapshot lists, a model's
// summary) and leave the pages at "Loading…". The short reads keep the global pool; the long
// jobs run here, each controller one at a time, so a handful of threads covers them.
#pragma once

#include <QThreadPool>

namespace tb {

inline QThreadPool* longJobPool()
{
    static QThreadPool* pool = [] {
        auto* p = new QThreadPool();  // never destroyed: jobs may still return at exit
        p->setMaxThreadCount(8);
        return p;
    }();
    return pool;
}

}  // namespace tb
