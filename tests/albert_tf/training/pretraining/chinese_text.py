"""Chinese technical prose written for the vocabulary-extension tests: a
script an English SentencePiece model reads as <unk>.

The word lists are hand-written (software, data and machine-learning
vocabulary); `sentences` combines them into varied lines, deterministically.
"""

import itertools

SUBJECTS = [
    "训练脚本", "数据管道", "分词器", "编码器", "优化器", "检查点",
    "评估程序", "调度器", "服务器", "客户端", "日志系统", "缓存层",
    "预处理模块", "导出工具", "分布式策略", "学习率", "注意力层", "嵌入矩阵",
    "损失函数", "梯度累积",
]
VERBS = [
    "读取", "写入", "压缩", "校验", "更新", "恢复", "保存", "加载", "拆分",
    "合并", "统计", "过滤", "排序", "转换", "复制", "删除", "监控", "记录",
]
OBJECTS = [
    "配置文件", "模型参数", "词表", "样本记录", "分片文件", "元数据",
    "随机种子", "掩码位置", "句子顺序", "隐藏状态", "权重衰减", "显存占用",
    "批次大小", "序列长度", "错误信息", "进度条", "验证集", "测试集",
    "标签映射", "版本号",
]
CONDITIONS = [
    "在每个步骤结束时", "当磁盘空间不足时", "如果输入为空", "在多机训练中",
    "为了保证结果可复现", "在中断之后", "对于很长的文档", "在量化之前",
    "当词表扩展以后", "在第一次评估前", "遇到损坏的记录时", "在混合精度下",
]
RESULTS = [
    "并且不会留下半写的文件", "然后打印一行摘要", "所以速度提高了三倍",
    "否则程序立即退出", "同时保持旧的编号不变", "以便下次继续运行",
    "但是内存占用保持平稳", "并报告每个字段的差异", "因此精度没有下降",
    "从而避免重复计算",
]


def sentences(count: int):
  """`count` distinct lines: condition, subject, verb, object, result."""
  combos = itertools.product(CONDITIONS, SUBJECTS, VERBS, OBJECTS, RESULTS)
  out = []
  for i, (when, who, verb, what, then) in enumerate(
      itertools.islice(combos, 0, None, 97)):
    if len(out) == count:
      break
    out.append(f"{when}，{who}会{verb}{what}，{then}。" if i % 2 else
               f"{who}{verb}{what}{then}。")
  return out
