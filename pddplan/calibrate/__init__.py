"""Calibration: fit a model's parameters to measured latencies by least squares.

- :mod:`pddplan.calibrate.chips`: a chip's efficiency derates, from prefill latencies, times
  to first token and decode step times (``pddplan calibrate --chip``);
- :mod:`pddplan.calibrate.link`: a link's transfer parameters, from measured transfers
  (``pddplan calibrate --link``);
- :mod:`pddplan.calibrate.fit`: the shared least-squares framework (sensitivities, bounded
  multi-start fit, standard errors, error summaries, the outcome of each parameter);
- :mod:`pddplan.calibrate.identify`: which parameters the rows identify;
- :mod:`pddplan.calibrate.cells`: reading measurement CSV files, with one-line errors that
  name the file, line and column.

The chip calibration's names are re-exported here (``from pddplan.calibrate import
fit_derates``). Nothing here prints or touches YAML; the CLI renders and writes.
"""

from pddplan.calibrate.chips import (
    COLLINEARITY_MAX,
    COLUMN_MAX,
    COLUMNS,
    FIXED_DERATES,
    OPTIONAL_EFFICIENCIES,
    PARAMETER_NAMES,
    PARAMETERS,
    PHASES,
    SENSITIVITY_MIN,
    SENSITIVITY_STEP,
    TTFT_OFFSET,
    FitResult,
    Measurements,
    calibrated_chip,
    default_derates,
    fit_derates,
    identify,
    instance_predictor,
    parse_measurements,
    read_measurements,
    structural_reasons,
    with_derates,
)
from pddplan.calibrate.fit import (
    ErrorSummary,
    Parameter,
    ParameterFit,
    Predictor,
)
from pddplan.calibrate.fit import Values as Derates
from pddplan.calibrate.identify import Identification, collinearity_index

__all__ = [
    "COLLINEARITY_MAX",
    "COLUMNS",
    "COLUMN_MAX",
    "FIXED_DERATES",
    "OPTIONAL_EFFICIENCIES",
    "PARAMETERS",
    "PARAMETER_NAMES",
    "PHASES",
    "SENSITIVITY_MIN",
    "SENSITIVITY_STEP",
    "TTFT_OFFSET",
    "Derates",
    "ErrorSummary",
    "FitResult",
    "Identification",
    "Measurements",
    "Parameter",
    "ParameterFit",
    "Predictor",
    "calibrated_chip",
    "collinearity_index",
    "default_derates",
    "fit_derates",
    "identify",
    "instance_predictor",
    "parse_measurements",
    "read_measurements",
    "structural_reasons",
    "with_derates",
]
