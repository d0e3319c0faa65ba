// One look for every QCustomPlot of the studio: colours from the widget's palette, so plots follow
// the system's light or dark theme like the rest of the window.
#pragma once

class QCustomPlot;
class QPalette;

namespace tb {

// Background, axes, tick labels, grid, legend and text elements from `palette` (Base, Text, Mid).
void applyPlotPalette(QCustomPlot* plot, const QPalette& palette);

}  // namespace tb
