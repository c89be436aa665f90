"""The CLUE recipes of the docs, each run through its tool on a few records
written here in CLUE's own file layout (TNEWS, IFLYTEK, AFQMC, OCNLI: JSON
lines; C3: nested JSON, converted by the docs' snippet) with a WordPiece
vocabulary in the released Chinese models' layout (--vocab_file)."""

import json
import os
import pathlib

import pytest

from tests.albert_tf.training.finetuning import own_data_kit as kit

TNEWS = {
    "train": [
        {"label": "103", "label_desc": "news_sports",
         "sentence": "国足主场两球战胜对手，球迷欢呼", "keywords": "国足,球迷"},
        {"label": "102", "label_desc": "news_entertainment",
         "sentence": "这部新电影上映三天票房破亿", "keywords": "电影,票房"},
        {"label": "104", "label_desc": "news_finance",
         "sentence": "央行宣布下调存款准备金率", "keywords": "央行"},
        {"label": "103", "label_desc": "news_sports",
         "sentence": "马拉松比赛周日在市中心举行", "keywords": ""},
    ],
    "dev": [
        {"label": "102", "label_desc": "news_entertainment",
         "sentence": "歌手新专辑发布会在北京举行", "keywords": "歌手"},
        {"label": "104", "label_desc": "news_finance",
         "sentence": "股市今天小幅上涨", "keywords": "股市"},
    ],
    "test": [{"id": 0, "sentence": "篮球联赛总决赛门票售罄", "keywords": ""},
             {"id": 1, "sentence": "银行发布新的理财产品", "keywords": ""}],
}
IFLYTEK = {
    "train": [
        {"label": "0", "label_des": "打车",
         "sentence": "一款方便的叫车软件，几分钟就能坐上车"},
        {"label": "1", "label_des": "地图导航",
         "sentence": "提供实时路况和语音导航，出行不迷路"},
        {"label": "0", "label_des": "打车", "sentence": "随时随地预约出租车"},
        {"label": "1", "label_des": "地图导航",
         "sentence": "离线地图下载，步行和驾车路线规划"},
    ],
    "dev": [{"label": "1", "label_des": "地图导航",
             "sentence": "查公交线路，看地铁换乘"}],
    "test": [{"id": 0, "sentence": "打开软件一键叫车回家"}],
}
AFQMC = {
    "train": [
        {"sentence1": "花呗怎么还款", "sentence2": "花呗如何还钱",
         "label": "1"},
        {"sentence1": "借呗可以提前还吗", "sentence2": "花呗的额度怎么提高",
         "label": "0"},
        {"sentence1": "为什么我的花呗不能用了", "sentence2": "花呗突然用不了",
         "label": "1"},
        {"sentence1": "余额宝怎么转出", "sentence2": "借呗利息是多少",
         "label": "0"},
    ],
    "dev": [{"sentence1": "花呗还款日是哪天", "sentence2": "花呗几号还款",
             "label": "1"}],
    "test": [{"id": 0, "sentence1": "借呗怎么关闭",
              "sentence2": "如何关掉借呗"}],
}


def _ocnli(level, premise, hypothesis, label, i):
  return {"level": level, "sentence1": premise, "sentence2": hypothesis,
          "label": label, "label0": label, "label1": label,
          "label2": "neutral", "label3": label, "label4": label,
          "genre": "lit", "prem_id": f"lit_{i}", "id": i}


OCNLI = {
    "train": [
        _ocnli("easy", "我们周末去公园散步了", "我们周末出门了", "entailment",
               0),
        _ocnli("medium", "他每天早上六点起床", "他从来不早起", "contradiction",
               1),
        _ocnli("hard", "妈妈在厨房做晚饭", "晚饭是鱼", "neutral", 2),
        _ocnli("medium", "火车晚点了半个小时", "火车准时到达", "-", 3),
    ],
    "dev": [_ocnli("easy", "孩子们在操场上踢足球", "孩子们在运动", "entailment",
                   4),
            _ocnli("easy", "老师说下周考试", "下周没有考试", "-", 5)],
    "test": [{"sentence1": "小猫躺在沙发上睡觉", "sentence2": "小猫醒着",
              "id": 0}],
}
C3 = {
    "train": [
        [["男：你明天几点去机场？", "女：早上八点，航班是十点的。"],
         [{"question": "女的航班几点起飞？", "choice": ["八点", "十点", "九点"],
           "answer": "十点"}], "d1-1"],
        [["北京的秋天又凉快又舒服，很多人喜欢去爬山。"],
         [{"question": "北京的秋天怎么样？", "choice": ["很热", "很舒服"],
           "answer": "很舒服"},
          {"question": "人们秋天喜欢做什么？",
           "choice": ["游泳", "爬山", "滑雪", "睡觉"], "answer": "爬山"}],
         "m1-1"],
    ],
    "dev": [[["女：这本书讲的是什么？", "男：一个关于友谊的故事。"],
             [{"question": "书讲的是什么？", "choice": ["友谊", "历史", "旅行"],
               "answer": "友谊"}], "d2-1"]],
    "test": [[["医生建议他多喝水，早点休息。"],
              [{"question": "医生建议什么？", "choice": ["多喝水", "多运动"],
                "id": 0}], "t1"]],
}

# The docs' conversion of C3's nested JSON to run_multiple_choice's JSON
# lines (test_the_docs_hold_the_c3_conversion keeps them equal).
C3_CONVERSION = '''import json


def c3_to_jsonl(source, target):
  """CLUE's C3 file (d-*.json, m-*.json) -> one JSON line per question,
  its choices padded to 4 with "无效答案" as CLUE's baseline pads them."""
  with open(source, encoding="utf-8") as f:
    documents = json.load(f)
  with open(target, "a", encoding="utf-8") as out:
    for lines, questions, document_id in documents:
      for i, question in enumerate(questions):
        choices = question["choice"] + ["无效答案"] * (
            4 - len(question["choice"]))
        record = {"id": f"{document_id}-{i}", "context": "\\n".join(lines),
                  "question": question["question"], "choices": choices}
        if "answer" in question:
          record["label"] = choices.index(question["answer"])
        out.write(json.dumps(record, ensure_ascii=False) + "\\n")
'''


def _write(folder, name, records, lines=True):
  path = folder / name
  with open(path, "w", encoding="utf-8") as f:
    if lines:
      f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    else:
      json.dump(records, f, ensure_ascii=False, indent=1)
  return str(path)


def _texts(value):
  if isinstance(value, str):
    yield value
  elif isinstance(value, dict):
    for v in value.values():
      yield from _texts(v)
  elif isinstance(value, list):
    for v in value:
      yield from _texts(v)


@pytest.fixture(scope="module")
def clue(tmp_path_factory, chinese_kit):
  """CLUE's folders (train.json, dev.json, test.json; C3's d-/m- files), a
  vocab_chinese.txt of their characters and a tiny config."""
  root = tmp_path_factory.mktemp("clue")
  corpus = root / "text.txt"
  tasks = {"tnews": TNEWS, "iflytek": IFLYTEK, "afqmc": AFQMC,
           "ocnli": OCNLI, "c3": C3}
  corpus.write_text("\n".join(t for task in tasks.values()
                              for t in _texts(task)) + "\n无效答案\n",
                    encoding="utf-8")
  tokens = chinese_kit.vocab_tokens(str(corpus))
  vocab = root / "albert_tiny_zh" / "vocab_chinese.txt"
  vocab.parent.mkdir()
  vocab.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  folders = {}
  for name, splits in tasks.items():
    folder = root / name
    folder.mkdir()
    folders[name] = folder
    for split, records in splits.items():
      if name == "c3":
        _write(folder, f"d-{split}.json", records, lines=False)
      else:
        _write(folder, f"{split}.json", records)
  return dict(root=root, folders=folders, vocab=str(vocab),
              config=kit.tiny_config(root / "albert_config.json",
                                     vocab_size=len(tokens)))


def _common(clue, out):
  return (f"--albert_config_file={clue['config']}",
          f"--vocab_file={clue['vocab']}", f"--output_dir={out}",
          "--do_train", "--do_eval", "--do_predict", "--max_seq_length=32",
          "--train_batch_size=2", "--train_step=2", "--warmup_step=1",
          "--iterations_per_loop=2", "--eval_batch_size=8", "--seed=0")


def _read_jsonl(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


# name -> (recipe flags as the docs give them, labels.json's labels).
RECIPES = {
    "tnews": (("--label_column=label_desc",),
              ["news_entertainment", "news_finance", "news_sports"]),
    "iflytek": (("--label_column=label_des",), ["地图导航", "打车"]),
    "afqmc": ((), ["0", "1"]),
    "ocnli": (("--skip_labels=-",),
              ["contradiction", "entailment", "neutral"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(RECIPES))
def test_classification_recipe_runs(clue, task, tmp_path, capsys, caplog):
  import logging
  caplog.set_level(logging.INFO, logger="absl")
  folder = clue["folders"][task]
  out = tmp_path / task
  flags, labels = RECIPES[task]
  status = kit.run_tool("run_classifier", f"--train_file={folder}/train.json",
                        f"--dev_file={folder}/dev.json",
                        f"--test_file={folder}/test.json", *flags,
                        *_common(clue, out))
  assert status == 0, capsys.readouterr().err[-3000:]
  with open(out / "labels.json", encoding="utf-8") as f:
    assert json.load(f)["labels"] == labels
  # The dev accuracy is the one its written predictions score against the
  # dev file's labels (the records --skip_labels drops left out).
  with open(out / "eval_results.json") as f:
    accuracy = json.load(f)["accuracy"]
  column = dict(f.split("=", 1) for f in flags if f.startswith(
      "--label_column")).get("--label_column", "label")
  gold = [r[column] for r in _read_jsonl(folder / "dev.json")
          if r["label"] != "-"]
  predicted = [p["label"] for p in _read_jsonl(out / "dev_predictions.jsonl")]
  assert len(predicted) == len(gold) > 0
  assert accuracy == pytest.approx(
      sum(p == g for p, g in zip(predicted, gold)) / len(gold), abs=1e-6)
  predictions = _read_jsonl(out / "test_predictions.jsonl")
  test = _read_jsonl(folder / "test.json")
  assert [p["id"] for p in predictions] == [str(r["id"]) for r in test]
  assert all(p["label"] in labels for p in predictions)
  if task == "ocnli":
    assert "1 skipped for their label (--skip_labels)" in caplog.text
  if task in ("afqmc", "ocnli"):  # sentence1 / sentence2 found as a pair
    assert "'text_b': 'sentence2'" in caplog.text


@pytest.mark.slow
def test_c3_recipe_runs_on_the_converted_files(clue, tmp_path, capsys):
  namespace = {}
  exec(C3_CONVERSION, namespace)  # noqa: S102 (the docs' snippet)
  folder = clue["folders"]["c3"]
  for split in ("train", "dev", "test"):
    namespace["c3_to_jsonl"](str(folder / f"d-{split}.json"),
                             str(tmp_path / f"{split}.jsonl"))
  train = _read_jsonl(tmp_path / "train.jsonl")
  assert [r["id"] for r in train] == ["d1-1-0", "m1-1-0", "m1-1-1"]
  assert train[1]["choices"] == ["很热", "很舒服", "无效答案", "无效答案"]
  assert [r["label"] for r in train] == [1, 1, 1]
  out = tmp_path / "run"
  status = kit.run_tool("run_multiple_choice",
                        f"--train_file={tmp_path}/train.jsonl",
                        f"--dev_file={tmp_path}/dev.jsonl",
                        f"--test_file={tmp_path}/test.jsonl",
                        "--max_qa_length=16", *_common(clue, out))
  assert status == 0, capsys.readouterr().err[-3000:]
  predictions = _read_jsonl(out / "test_predictions.jsonl")
  assert [p["id"] for p in predictions] == ["t1-0"]
  assert len(predictions[0]["probabilities"]) == 4
  assert os.path.exists(out / "eval_results.json")


def test_the_docs_hold_the_c3_conversion():
  docs = pathlib.Path(__file__).resolve().parents[4] / "docs"
  text = (docs / "finetuning.md").read_text(encoding="utf-8")
  assert C3_CONVERSION in text
