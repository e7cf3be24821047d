"""A grading run on disk: its inputs, configuration, resume fingerprints and outputs.

* :mod:`~gradebox.runs.inputs`: loading hidden, public and samples files;
* :mod:`~gradebox.runs.prepare`: tasks completed from a reference and properties;
* :mod:`~gradebox.runs.config`: the frozen :class:`~gradebox.runs.config.RunConfig`;
* :mod:`~gradebox.runs.fingerprint`: what a sample's grade depended on;
* :mod:`~gradebox.runs.rundir`: the run directory, its manifest and resume;
* :mod:`~gradebox.runs.output`: every output covering the whole run;
* :mod:`~gradebox.runs.summary`, :mod:`~gradebox.runs.passk`, :mod:`~gradebox.runs.diff`:
  what is read from finished runs.
"""
