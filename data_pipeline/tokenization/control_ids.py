"""The control-token ids every tokenizer of ours offers, by name."""


class ControlIds:
  """`pad_id`, `unk_id`, `cls_id`, `sep_id` and `mask_id` (int) of a
  tokenizer, each looked up by the subclass's `_control_id(name)`, which
  finds the token by name in its vocabulary (any layout) or raises
  UserInputError naming the vocabulary."""

  def _control_id(self, name: str) -> int:
    raise NotImplementedError

  @property
  def pad_id(self) -> int:
    return self._control_id("pad_id")

  @property
  def unk_id(self) -> int:
    return self._control_id("unk_id")

  @property
  def cls_id(self) -> int:
    return self._control_id("cls_id")

  @property
  def sep_id(self) -> int:
    return self._control_id("sep_id")

  @property
  def mask_id(self) -> int:
    return self._control_id("mask_id")
