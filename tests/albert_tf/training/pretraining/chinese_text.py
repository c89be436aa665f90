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


# Everyday prose on other subjects (cooking, travel, seasons, history,
# health, sport, music, family, markets): characters the technical lines
# above never use, a few hundred more.
PROSE = [
    "清晨的集市上，农民把新鲜的蔬菜和水果摆在竹筐里，叫卖声此起彼伏。",
    "奶奶做的红烧肉肥而不腻，配上一碗热腾腾的米饭，香味飘满整个院子。",
    "秋天到了，山坡上的枫叶渐渐变红，远远望去像一片燃烧的火海。",
    "我们乘坐夜班火车去西北旅行，窗外是无边无际的沙漠和戈壁。",
    "古代的丝绸之路连接着东方与西方，商队带着茶叶、瓷器和香料往来。",
    "医生叮嘱他少吃盐和糖，每天散步半小时，按时服药，定期复诊。",
    "周末的足球比赛非常激烈，双方踢到加时赛，最后靠点球决出胜负。",
    "她从小学习钢琴，如今在音乐学院教书，偶尔也登台演奏肖邦的夜曲。",
    "春节前夕，家家户户贴春联、挂灯笼，孩子们穿上新衣服去拜年。",
    "超市里鸡蛋和牛奶涨价了，妈妈决定改去街角的小店买豆腐和青菜。",
    "大雪封山以后，牧民赶着羊群转到南边的草场，帐篷里生起了炉火。",
    "这座桥始建于明朝，石头上的雕刻虽然风化，但狮子的神态依然生动。",
    "爷爷喜欢在树荫下下象棋，一边喝着浓茶，一边讲年轻时当兵的故事。",
    "湖边的柳树发芽了，燕子飞回屋檐下筑巢，田野里开满了金黄的油菜花。",
    "厨师先把鱼洗净切块，用姜片和料酒腌制，再放进油锅里煎到两面焦黄。",
    "博物馆新展出一批青铜器，其中一尊鼎的铭文记录了当年祭祀的仪式。",
    "台风登陆前，渔船纷纷回港避风，沿海的居民也提前储备了饮用水。",
    "他每天坚持跑步五公里，半年后体重减轻了十斤，睡眠也好了许多。",
    "舞台上的演员唱念做打样样精通，台下的观众不时报以热烈的掌声。",
    "弟弟考上了北方的大学，临行前全家人一起吃了顿饺子为他送行。",
    "夏夜的草丛里萤火虫闪闪发光，青蛙在池塘边呱呱地叫个不停。",
    "老师傅用刨子把木板刨得又平又滑，然后用榫卯把桌腿牢牢接上。",
    "这家面馆只卖牛肉拉面，汤头清澈，面条筋道，门口总排着长队。",
    "冬至那天北方人吃饺子，南方人吃汤圆，寓意团团圆圆、和和美美。",
    "登上泰山顶峰时，太阳正从云海中升起，金光洒满了层层叠叠的山峦。",
    "感冒发烧的时候要多喝温水，注意休息，如果咳嗽加重应及时就医。",
    "篮球队教练要求队员加强防守，多传球少单打，比赛后还要看录像复盘。",
    "村口那棵老槐树据说有三百岁了，树干粗得要三个人才能合抱。",
    "姐姐在花店打工，每天修剪玫瑰、百合和康乃馨，手指常被刺扎破。",
    "考古队在河谷里发掘出陶罐、骨针和石斧，证明这里曾有人类居住。",
    "雨后的竹林格外清新，竹笋破土而出，空气中弥漫着泥土的芬芳。",
    "菜谱上写着：先炒香葱蒜，加入番茄翻炒出汁，再倒入打散的鸡蛋。",
    "小镇的邮局还保留着绿色的邮筒，老人们仍习惯寄信给远方的亲戚。",
    "乒乓球是国球，公园里常能看到退休的老人挥拍对练，精神矍铄。",
    "乐队的鼓手敲出急促的节奏，吉他手随即弹起一段明快的旋律。",
    "海边的渔村以捕虾和晒海带为生，傍晚时分码头上满是海腥味。",
    "他在旧书摊淘到一本泛黄的诗集，扉页上还有前任主人的签名。",
    "暴雨导致山路塌方，救援队连夜抢修，终于打通了被困村庄的通道。",
    "果园里的苹果熟透了，孩子们爬上梯子摘果子，筐子很快就装满了。",
    "她把毛线织成围巾和手套，寄给在边疆哨所站岗的哥哥。",
]


def prose_sentences(count: int):
  """`count` lines: the technical `sentences`, with a line of `PROSE`
  after every third of them (cycling through it)."""
  out = []
  for i, line in enumerate(sentences(count)):
    if len(out) == count:
      break
    out.append(line)
    if i % 3 == 2 and len(out) < count:
      out.append(PROSE[(i // 3) % len(PROSE)])
  return out
