#pragma once

#include <QObject>

namespace memx::ui {

/// The one selected plan of a window (id as in PlanPoint::id, 0 = none). Table rows, Pareto
/// points, the memory bars, the stage diagram and the detail text all follow changed(); anything
/// that selects (a click, a re-rank, a test) calls select(). GUI thread only.
class PlanSelection : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;

    quint32 current() const { return mCurrent; }
    /// Selects `id`; emits changed(id) only when it differs from the current plan.
    void select(quint32 id)
    {
        if (id == mCurrent)
            return;
        mCurrent = id;
        emit changed(id);
    }

signals:
    void changed(quint32 id);

private:
    quint32 mCurrent = 0;
};

} // namespace memx::ui
