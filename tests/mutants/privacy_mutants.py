"""Privacy mutants: small textual patches that silently break the guarantee or its accounting.

Each is a dict: ``file`` (from the repository root), ``old`` (a string that occurs exactly
once in that file), ``new``, ``description``, ``klass`` (the issue-28 class: 1 a release
noised for a smaller sensitivity than it has; 2 noise drawn and recorded but the exact
statistic used downstream; 3 ``secure_mode=True`` falling back to a seeded generator; 4 an
interval that reports less uncertainty than the release has, issue 35) and
``focus`` (the test file expected to catch it, run first). ``tools/mutation_score.py``
applies each to a copy of the repository and runs the privacy tests. This is data, not a
test module; add a mutant with every new release.
"""

MUTANTS = [
    # -- class 1: noise for a smaller sensitivity than the release has ---------------
    {
        "name": "scaler-one-column",
        "klass": 1,
        "file": "skfairdp/preprocessing/scaler.py",
        "old": "sensitivity=math.sqrt(2 * d)",
        "new": "sensitivity=math.sqrt(2)",
        "description": "DPStandardScaler's moments noised for one column, whatever d",
        "focus": "tests/test_drawn_scale.py",
    },
    {
        "name": "encoder-one-column",
        "klass": 1,
        "file": "skfairdp/preprocessing/encoder.py",
        "old": "sensitivity = math.sqrt(d)",
        "new": "sensitivity = 1.0",
        "description": "DPOneHotEncoder's counts noised for one column, whatever d",
        "focus": "tests/test_drawn_scale.py",
    },
    {
        "name": "imputer-mean-half",
        "klass": 1,
        "file": "skfairdp/preprocessing/imputer.py",
        "old": "mean_sums(X, missing, self.lower_, self.upper_), math.sqrt(2 * d)",
        "new": "mean_sums(X, missing, self.lower_, self.upper_), math.sqrt(d)",
        "description": "DPSimpleImputer(mean): sums and presence counts noised for one of the two",
        "focus": "tests/test_drawn_scale.py",
    },
    {
        "name": "fermi-record-histogram",
        "klass": 1,
        "file": "skfairdp/fermi/priors.py",
        "old": "unit = math.sqrt(0.5) if moves_two else 1.0",
        "new": "unit = math.sqrt(0.5)",
        "description": "DP-FERMI's group histogram under privacy_unit='record' noised for 1/sqrt 2",
        "focus": "tests/test_drawn_scale.py",
    },
    {
        "name": "raco-best-one-candidate",
        "klass": 1,
        "file": "skfairdp/raco/solutions.py",
        "old": "sensitivity=math.sqrt(len(candidates)) * ctx.max_weight",
        "new": "sensitivity=ctx.max_weight",
        "description": "RaCO solution='best': the K stacked histograms noised as one",
        "focus": "tests/test_drawn_scale.py",
    },
    {
        "name": "federated-dual-half",
        "klass": 1,
        "file": "skfairdp/federated/silo.py",
        "old": 'dual, state["dual_clip"], self.noise["dual"]',
        "new": 'dual, 0.5 * state["dual_clip"], self.noise["dual"]',
        "description": "a silo's W release noised for half its clip",
        "focus": "tests/test_drawn_scale.py",
    },
    # -- class 2: noise drawn and recorded, the exact statistic used ------------------
    {
        "name": "raco-best-exact",
        "klass": 2,
        "file": "skfairdp/raco/solutions.py",
        "old": "        H = noisy.numpy()",
        "new": "        _ = noisy.numpy()",
        "description": "RaCO solution='best' selects on the exact prediction counts",
        "focus": "tests/test_exact_use.py",
    },
    {
        "name": "cgoo-atoms-exact",
        "klass": 2,
        "file": "skfairdp/reductions/estimator.py",
        "old": "exact = release_sums(exact, statistics, noise.statistics, random, recorder)",
        "new": "release_sums(exact, statistics, noise.statistics, random, recorder)",
        "description": "CGOO's atom statistics released, the exact ones used",
        "focus": "tests/test_exact_use.py",
    },
    {
        "name": "scaler-exact",
        "klass": 2,
        "file": "skfairdp/preprocessing/scaler.py",
        "old": "        noisy = noisy.numpy()",
        "new": "        noisy = sums.numpy()",
        "description": "DPStandardScaler's mean_ and scale_ from the exact moments",
        "focus": "tests/test_exact_use.py",
    },
    {
        "name": "encoder-exact",
        "klass": 2,
        "file": "skfairdp/preprocessing/encoder.py",
        "old": "        noisy = noisy.numpy()",
        "new": "        noisy = np.asarray(counts, dtype=np.float64)",
        "description": "DPOneHotEncoder keeps categories by the exact counts",
        "focus": "tests/test_exact_use.py",
    },
    {
        "name": "search-exact-score",
        "klass": 2,
        "file": "skfairdp/model_selection/search.py",
        "old": "stats = noisy_accuracy(float(noisy), len(y_val))",
        "new": "stats = noisy_accuracy(float(correct), len(y_val))",
        "description": "PrivateSearchCV selects on the exact validation accuracy",
        "focus": "tests/test_exact_use.py",
    },
    {
        "name": "raco-steps-exact",
        "klass": 2,
        "file": "skfairdp/raco/problem.py",
        "old": "        self.n_releases += 1\n        if self.histogram_noise is None:",
        "new": "        self.n_releases += 1\n        if True:",
        "description": "RaCO's dual ascent on the exact per-step histograms (no noise drawn)",
        "focus": "tests/test_exact_use.py",
    },
    {
        "name": "fermi-priors-exact",
        "klass": 2,
        "file": "skfairdp/fermi/priors.py",
        "old": "        counts = noisy.numpy()",
        "new": "        noisy.numpy()",
        "description": "DP-FERMI's group priors from the exact group histogram",
        "focus": "tests/test_exact_use.py",
    },
    {
        "name": "metric-frame-exact",
        "klass": 2,
        "file": "skfairdp/evaluation/table.py",
        "old": "return Release(noisy.numpy(), z, sensitivity, resolved, recorder.build())",
        "new": "return Release(table, z, sensitivity, resolved, recorder.build())",
        "description": "PrivateMetricFrame reports the exact confusion table",
        "focus": "tests/test_exact_use.py",
    },
    # -- class 3: secure_mode=True falls back to a seeded generator --------------------
    {
        "name": "preprocessing-seeded",
        "klass": 3,
        "file": "skfairdp/preprocessing/_step.py",
        "old": "random = RandomSource(self.random_state, secure_mode=self.secure_mode)",
        "new": "random = RandomSource(self.random_state)",
        "description": "the private scaler, encoder and imputer ignore secure_mode",
        "focus": "tests/test_secure_mode.py",
    },
    {
        "name": "cgoo-seeded",
        "klass": 3,
        "file": "skfairdp/reductions/estimator.py",
        "old": "random = RandomSource(self.random_state, secure_mode=self.secure_mode)",
        "new": "random = RandomSource(self.random_state)",
        "description": "CGOOReduction's releases ignore secure_mode",
        "focus": "tests/test_secure_mode.py",
    },
    {
        "name": "oracle-seeded",
        "klass": 3,
        "file": "skfairdp/privacy/random.py",
        "old": 'return {"random_state": None, "secure_mode": True}',
        "new": 'return {"random_state": int.from_bytes(os.urandom(3), "little"), '
        '"secure_mode": False}',
        "description": "a secure source seeds its children's estimators (CGOO's oracles, a "
        "search's runs) from a CSPRNG seed instead of making them secure",
        "focus": "tests/test_secure_mode.py",
    },
    {
        "name": "silo-seeded",
        "klass": 3,
        "file": "skfairdp/federated/silo.py",
        "old": "RandomSource(seed, secure_mode=config.secure_mode, device=device)",
        "new": "RandomSource(seed, device=device)",
        "description": "a federated silo ignores secure_mode",
        "focus": "tests/test_secure_mode.py",
    },
    {
        "name": "metric-frame-seeded",
        "klass": 3,
        "file": "skfairdp/evaluation/frame.py",
        "old": "random = RandomSource(random_state, secure_mode=secure_mode)",
        "new": "random = RandomSource(random_state)",
        "description": "PrivateMetricFrame's table noise ignores secure_mode",
        "focus": "tests/test_secure_mode.py",
    },
    {
        "name": "predict-seeded",
        "klass": 3,
        "file": "skfairdp/_fit/randomized.py",
        "old": '    if getattr(estimator, "secure_mode", False):\n',
        "new": "    if False:\n",
        "description": "a secure randomised classifier's predict draws from its random_state",
        "focus": "tests/test_secure_mode.py",
    },
    # -- class 4: an interval more optimistic than the release (issue 35) -------------
    {
        "name": "frame-interval-unweighted",
        "klass": 4,
        "file": "skfairdp/evaluation/frame.py",
        "old": "self._released, self.noise_std_, int(self.n_draws), rng",
        "new": "self._released, self.noise_multiplier_, int(self.n_draws), rng",
        "description": "PrivateMetricFrame's intervals integrate noise of std noise_multiplier_, "
        "ignoring max_sample_weight (the release's sensitivity)",
        "focus": "tests/test_interval_honesty.py",
    },
    {
        "name": "eo-interval-no-split",
        "klass": 4,
        "file": "skfairdp/evaluation/violations.py",
        "old": "each = confidence if len(NOTIONS[notion]) == 1 else 1 - (1 - confidence) / len(",
        "new": "each = confidence if True else 1 - (1 - confidence) / len(",
        "description": "the equalized-odds interval takes both differences at the full "
        "confidence (no Bonferroni split)",
        "focus": "tests/test_interval_honesty.py",
    },
]
